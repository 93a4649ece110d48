"""How clients dial the hub: settings from flags or the environment; a token never goes out in
plaintext beyond loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from vglobal.dial import Dial, DialError, is_loopback


@pytest.mark.parametrize(
    ("target", "loopback"),
    [("127.0.0.1:50051", True), ("localhost:1", True), ("[::1]:50051", True), ("127.3.4.5:9", True),
     ("10.0.0.1:50051", False), ("hub.example.com:50051", False), ("dns:///localhost:50051", True)],
)  # fmt: skip
def test_loopback_targets(target: str, loopback: bool) -> None:
    assert is_loopback(target) is loopback


def test_a_token_is_refused_in_plaintext_beyond_loopback(tmp_path: Path) -> None:
    with pytest.raises(DialError, match=r"plaintext to hub\.example\.com:50051.*--ca-file"):
        Dial("hub.example.com:50051", token="t").check()
    Dial("127.0.0.1:50051", token="t").check()
    ca = tmp_path / "ca.crt"
    ca.write_text("x")
    Dial("hub.example.com:50051", ca_file=ca, token="t").check()


def test_a_certificate_needs_its_key(tmp_path: Path) -> None:
    with pytest.raises(DialError, match="--cert and --key go together"):
        Dial("h:1", cert=tmp_path / "a.crt").check()


def test_settings_come_from_the_environment_unless_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    monkeypatch.setenv("VGLOBAL_HUB", "hub:1")
    monkeypatch.setenv("VGLOBAL_CA_FILE", "/ca.crt")
    monkeypatch.setenv("VGLOBAL_TOKEN_FILE", str(token_file))
    d = Dial.from_env()
    assert (d.target, d.ca_file, d.token, d.tls) == ("hub:1", Path("/ca.crt"), "from-file", True)
    assert Dial.from_env("other:2", token="given").token == "given"
    monkeypatch.delenv("VGLOBAL_TOKEN_FILE")
    monkeypatch.setenv("VGLOBAL_TOKEN", "from-env")
    assert Dial.from_env().token == "from-env"


def test_an_unreadable_file_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(DialError, match="--ca-file: cannot read"):
        Dial("h:1", ca_file=tmp_path / "missing.crt").channel()
