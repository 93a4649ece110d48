"""A hub as it runs in production: TLS, agents on client certificates (their own port), users with
tokens and roles; certificates and tokens from `vglobal certs init` in the test's directory."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vglobal.cli.certs import UserSpec, init_certs
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.dial import Dial
from vglobal.hub.server import Hub

USERS = [
    "ada:admin",
    "alice:submitter:team-a*",
    "bob:submitter:team-b",
    "vic:viewer",
    "vera:viewer:team-a*",
    "olga:operator",
    "east-token:agent:gpu-east",
]
CLUSTERS = ["gpu-east", "gpu-west"]


@dataclass
class SecureHub:
    hub: Hub
    certs: Path

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.hub.port}"

    @property
    def agent_target(self) -> str:
        return f"127.0.0.1:{self.hub.agent_port}"

    def token(self, user: str) -> str:
        return (self.certs / f"token-{user}").read_text().strip()

    def dial(self, user: str | None = None) -> Dial:
        """A user's way in: TLS to the API port, with the user's token (or none)."""
        return Dial(self.target, ca_file=self.certs / "ca.crt", token=self.token(user) if user else None)

    def agent_dial(self, cluster: str) -> Dial:
        """An agent's way in: mutual TLS with the cluster's certificate on the agents' port."""
        return Dial(
            self.agent_target,
            ca_file=self.certs / "ca.crt",
            cert=self.certs / f"agent-{cluster}.crt",
            key=self.certs / f"agent-{cluster}.key",
        )

    def client(self, user: str, **kw: Any) -> Client:
        return Client(dial=self.dial(user), timeout=10, retries=1, **kw)


def make_certs(directory: Path, clusters: list[str] = CLUSTERS, users: list[str] = USERS) -> Path:
    init_certs(directory, "localhost", clusters, [UserSpec.parse(u) for u in users], days=1)
    return directory


def secure_settings(certs: Path, database_url: str, **extra: Any) -> HubSettings:
    return HubSettings(
        listen="127.0.0.1:0",
        database_url=database_url,
        dispatch_interval=0.2,
        tls_cert=certs / "hub.crt",
        tls_key=certs / "hub.key",
        client_ca=certs / "ca.crt",
        agent_listen="127.0.0.1:0",
        auth_config=certs / "auth.yaml",
        **extra,
    )


@pytest.fixture
def secure(tmp_path: Path, database_url: str) -> Iterator[SecureHub]:
    certs = make_certs(tmp_path / "certs")
    hub = Hub(secure_settings(certs, database_url))
    hub.start()
    yield SecureHub(hub, certs)
    hub.shutdown()
