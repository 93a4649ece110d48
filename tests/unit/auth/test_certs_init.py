"""`vglobal certs init`: the files a trial needs, with the names and modes the hub and agents rely on."""

from __future__ import annotations

import datetime
import ipaddress
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.x509 import verification

from vglobal.cli.certs import certs
from vglobal.hub.auth.config import load_auth_config
from vglobal.hub.auth.policy import Grant, Role
from vglobal.hub.auth.tokens import hash_token


def run(*args: str) -> str:
    result = CliRunner().invoke(certs, ["init", *args])
    assert result.exit_code == 0, result.output
    return result.output


def read(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_init_writes_a_ca_a_hub_and_agent_certificates_tokens_and_the_auth_config(tmp_path: Path) -> None:
    d = tmp_path / "certs"
    run("--dir", str(d), "--hub-host", "hub.example.com", "--cluster", "gpu-east", "--cluster", "gpu-west",
        "--user", "alice:submitter:team-a*", "--user", "alice:viewer", "--user", "ops:admin",
        "--user", "east-agent:agent:gpu-east")  # fmt: skip
    assert sorted(p.name for p in d.iterdir()) == sorted(
        ["ca.crt", "hub.crt", "hub.key", "auth.yaml", "agent-gpu-east.crt", "agent-gpu-east.key",
         "agent-gpu-west.crt", "agent-gpu-west.key", "token-alice", "token-ops", "token-east-agent"]
    )  # fmt: skip
    for secret in ("hub.key", "agent-gpu-east.key", "token-alice", "token-ops"):
        assert stat.S_IMODE((d / secret).stat().st_mode) == 0o600, secret
    assert stat.S_IMODE(d.stat().st_mode) == 0o700

    store = verification.Store([read(d / "ca.crt")])
    now = datetime.datetime.now(datetime.UTC)
    hub = read(d / "hub.crt")
    for name in ("hub.example.com", "localhost"):
        builder = verification.PolicyBuilder().store(store).time(now)
        builder.build_server_verifier(x509.DNSName(name)).verify(hub, [])
    sans = hub.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)

    east = read(d / "agent-gpu-east.crt")
    verified = verification.PolicyBuilder().store(store).time(now).build_client_verifier().verify(east, [])
    assert verified.subjects is not None
    uris = [s.value for s in verified.subjects if isinstance(s, x509.UniformResourceIdentifier)]
    assert uris == ["spiffe://vglobal/cluster/gpu-east"]

    config = load_auth_config(d / "auth.yaml")
    users = {u.name: u for u in config.users}
    assert users["alice"].token_sha256 == hash_token((d / "token-alice").read_text().strip())
    assert config.principal(users["alice"]).grants == (
        Grant(Role.submitter, queues=("team-a*",)),
        Grant(Role.viewer),
    )
    assert config.principal(users["east-agent"]).agent_clusters() == ("gpu-east",)


def test_an_ip_address_hub_host_is_an_ip_san(tmp_path: Path) -> None:
    run("--dir", str(tmp_path), "--hub-host", "10.1.2.3")
    sans = read(tmp_path / "hub.crt").extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("10.1.2.3") in sans.get_values_for_type(x509.IPAddress)
    assert "10.1.2.3" not in sans.get_values_for_type(x509.DNSName)


def test_existing_files_are_kept_unless_forced(tmp_path: Path) -> None:
    run("--dir", str(tmp_path), "--hub-host", "h", "--user", "a:admin")
    token = (tmp_path / "token-a").read_text()
    again = CliRunner().invoke(
        certs, ["init", "--dir", str(tmp_path), "--hub-host", "h", "--user", "a:admin"]
    )
    assert again.exit_code != 0 and "--force" in again.output
    assert (tmp_path / "token-a").read_text() == token
    run("--dir", str(tmp_path), "--hub-host", "h", "--user", "a:admin", "--force")
    assert (tmp_path / "token-a").read_text() != token


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--user", "alice"], "NAME:ROLE"),
        (["--user", "alice:root"], "role must be one of"),
        (["--user", "a:agent"], "NAME:agent:CLUSTER"),
        (["--cluster", "Not_A_Name"], "--cluster[0]"),
        (["--user", "a:admin:team-*"], "roleBindings[0].queues"),
    ],
)
def test_bad_arguments_are_refused_naming_them(tmp_path: Path, args: list[str], says: str) -> None:
    result = CliRunner().invoke(certs, ["init", "--dir", str(tmp_path), "--hub-host", "h", *args])
    assert result.exit_code != 0 and says in result.output
    assert not (tmp_path / "ca.crt").exists()
