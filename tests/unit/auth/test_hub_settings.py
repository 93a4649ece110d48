"""Secure by default: what the hub refuses to start with."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from vglobal.config import HubSettings, parse_rate

CERT, KEY, CA, AUTH = Path("hub.crt"), Path("hub.key"), Path("ca.crt"), Path("auth.yaml")


def test_loopback_without_tls_is_fine() -> None:
    for listen in ("127.0.0.1:50051", "localhost:1", "[::1]:2"):
        assert not HubSettings(listen=listen).tls


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"listen": "0.0.0.0:50051"}, "without TLS the hub listens only on loopback"),
        ({"listen": "0.0.0.0:50051", "tls_cert": CERT, "tls_key": KEY}, "needs --auth-config"),
        ({"tls_cert": CERT}, "--tls-cert and --tls-key go together"),
        ({"client_ca": CA, "agent_listen": "127.0.0.1:1"}, "--client-ca needs --tls-cert"),
        ({"tls_cert": CERT, "tls_key": KEY, "client_ca": CA}, "--client-ca and --agent-listen go together"),
    ],
)
def test_refused(settings: dict[str, object], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        HubSettings(**settings)  # type: ignore[arg-type]


def test_beyond_loopback_with_tls_and_auth_or_when_told_insecure() -> None:
    HubSettings(listen="0.0.0.0:50051", tls_cert=CERT, tls_key=KEY, auth_config=AUTH)
    HubSettings(listen="0.0.0.0:50051", insecure=True)


@pytest.mark.parametrize(
    ("text", "per_second"), [("100/s", 100), ("6000/m", 100), ("7200/h", 2), ("5", 5), ("0", 0)]
)
def test_rates(text: str, per_second: float) -> None:
    assert parse_rate(text) == per_second


def test_a_bad_rate_names_the_flag() -> None:
    with pytest.raises(ValueError, match="rate-limit"):
        parse_rate("fast")


def test_a_refused_setting_is_told_without_echoing_the_database_password() -> None:
    from vglobal.cli.settings_flags import settings_error

    with pytest.raises(ValidationError) as err:
        HubSettings(listen="0.0.0.0:1", database_url="postgresql://u:hunter2@db/x")
    told = settings_error(err.value)
    assert "hunter2" not in told and told.startswith("--listen 0.0.0.0:1: without TLS")
    with pytest.raises(ValidationError) as err:
        HubSettings(rate_burst=0, database_url="postgresql://u:hunter2@db/x")
    told = settings_error(err.value)
    assert "hunter2" not in told and told.startswith("--rate-burst: ")
