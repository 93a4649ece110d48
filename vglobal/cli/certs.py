"""`vglobal certs init`: a CA, the hub's certificate, one client certificate per member cluster, a
token per user and the hub's auth config, for trials and tests.

In production the same files come from your own CA or cert-manager; what the hub relies on is only
that an agent's certificate carries the URI SAN ``spiffe://vglobal/cluster/NAME`` and is signed by
the CA given to ``--client-ca``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vglobal.hub.auth.config import (
    API_VERSION,
    KIND,
    AuthConfig,
    RoleBinding,
    User,
    dump_auth_config,
    parse_auth_config,
)
from vglobal.hub.auth.identity import cluster_uri
from vglobal.hub.auth.policy import Role
from vglobal.hub.auth.tokens import hash_token, new_token
from vglobal.model.errors import ManifestError, Problems
from vglobal.model.k8s import check_name

Key = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class UserSpec:
    """``NAME:ROLE[:SCOPE]``: SCOPE is a queue glob, or for role agent the cluster it speaks for."""

    name: str
    role: Role
    scope: str | None

    @classmethod
    def parse(cls, text: str) -> UserSpec:
        parts = text.split(":")
        if len(parts) not in (2, 3) or not parts[0]:
            raise click.BadParameter(f"{text!r}: expected NAME:ROLE[:QUEUE_GLOB]", param_hint="--user")
        roles = [r.value for r in Role]
        if parts[1] not in roles:
            raise click.BadParameter(f"{text!r}: role must be one of {', '.join(roles)}", param_hint="--user")
        role = Role(parts[1])
        scope = parts[2] if len(parts) == 3 else None
        if role is Role.agent and not scope:
            raise click.BadParameter(
                f"{text!r}: an agent needs its cluster: NAME:agent:CLUSTER", param_hint="--user"
            )
        return cls(parts[0], role, scope or None)

    def binding(self) -> RoleBinding:
        if self.role is Role.agent:
            return RoleBinding(subject=self.name, role=self.role, clusters=(self.scope or "",))
        queues = (self.scope,) if self.scope else None
        return RoleBinding(subject=self.name, role=self.role, queues=queues)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key() -> Key:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _sign(
    subject: str,
    key: Key,
    issuer: tuple[x509.Certificate, Key] | None,
    days: int,
    sans: list[x509.GeneralName],
    usage: x509.ObjectIdentifier | None,
) -> x509.Certificate:
    """A certificate for ``key``: self-signed CA when ``issuer`` is None, else a leaf signed by it."""
    start = _now() - datetime.timedelta(minutes=5)  # tolerate small clock skew
    ca = issuer is None
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer[0].subject if issuer else _name(subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(_key_usage(ca=ca), critical=True)
    )
    if issuer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer[1].public_key()), critical=False
        ).add_extension(x509.ExtendedKeyUsage([usage] if usage else []), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    signer = issuer[1] if issuer else key
    return builder.sign(signer, hashes.SHA256())


def default_dir() -> Path:
    """Where `certs init` writes without --dir: outside any checkout, as other tools keep their
    credentials ($XDG_CONFIG_HOME/vglobal/certs, else ~/.config/vglobal/certs)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "vglobal" / "certs"


def hub_names(*hosts: str) -> list[x509.GeneralName]:
    """Each host (as an IP address or a DNS name) plus the loopback names the hub's own probes dial."""
    names: list[x509.GeneralName] = []
    for value in (*hosts, "localhost", "127.0.0.1", "::1"):
        try:
            entry: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(value))
        except ValueError:
            entry = x509.DNSName(value)
        if entry not in names:
            names.append(entry)
    return names


def _write(path: Path, data: bytes, *, secret: bool) -> None:
    """Write a file; a secret is created with mode 0600 before any byte goes in."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600 if secret else 0o644)


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _pem_key(key: Key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def build_auth_config(users: Iterable[UserSpec], tokens: dict[str, str]) -> AuthConfig:
    specs = list(users)
    names = list(dict.fromkeys(s.name for s in specs))
    config = AuthConfig(
        api_version=API_VERSION,
        kind=KIND,
        users=tuple(User(name=n, token_sha256=hash_token(tokens[n])) for n in names),
        role_bindings=tuple(s.binding() for s in specs),
    )
    return parse_auth_config(dump_auth_config(config))  # the same checks the hub makes when it loads it


def planned_files(clusters: list[str], users: list[UserSpec]) -> list[str]:
    files = ["ca.crt", "hub.crt", "hub.key", "auth.yaml"]
    files += [f"agent-{c}.{ext}" for c in clusters for ext in ("crt", "key")]
    return files + [f"token-{n}" for n in dict.fromkeys(u.name for u in users)]


def init_certs(
    directory: Path, hub_host: str | Sequence[str], clusters: list[str], users: list[UserSpec], days: int
) -> None:
    """Write the files into ``directory``; the hub's certificate names every one of ``hub_host``
    (the first is its common name)."""
    hosts = [hub_host] if isinstance(hub_host, str) else list(dict.fromkeys(hub_host))
    tokens = {u.name: new_token() for u in users}
    config = build_auth_config(users, tokens)  # checked before anything is written
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca_key = _key()
    ca = _sign("vglobal trial CA", ca_key, None, days, [], None)
    _write(directory / "ca.crt", _pem_cert(ca), secret=False)
    hub_key = _key()
    hub = _sign(hosts[0], hub_key, (ca, ca_key), days, hub_names(*hosts), ExtendedKeyUsageOID.SERVER_AUTH)
    _write(directory / "hub.crt", _pem_cert(hub), secret=False)
    _write(directory / "hub.key", _pem_key(hub_key), secret=True)
    for cluster in clusters:
        key = _key()
        sans: list[x509.GeneralName] = [x509.UniformResourceIdentifier(cluster_uri(cluster))]
        cert = _sign(cluster, key, (ca, ca_key), days, sans, ExtendedKeyUsageOID.CLIENT_AUTH)
        _write(directory / f"agent-{cluster}.crt", _pem_cert(cert), secret=False)
        _write(directory / f"agent-{cluster}.key", _pem_key(key), secret=True)
    for name, token in tokens.items():
        _write(directory / f"token-{name}", (token + "\n").encode(), secret=True)
    _write(directory / "auth.yaml", dump_auth_config(config).encode(), secret=False)


@click.group("certs")
def certs() -> None:
    """Certificates and tokens for a trial (use your own CA or cert-manager in production)."""


@certs.command("init")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to write (default $XDG_CONFIG_HOME/vglobal/certs, else ~/.config/vglobal/certs).",
)
@click.option(
    "--hub-host",
    "hub_hosts",
    multiple=True,
    required=True,
    help="A DNS name or IP address the hub is dialled at; repeat for each (all go in its certificate).",
)
@click.option("--cluster", "clusters", multiple=True, help="A member cluster to make a certificate for.")
@click.option("--user", "users", multiple=True, help="NAME:ROLE[:QUEUE_GLOB], or NAME:agent:CLUSTER.")
@click.option("--days", type=click.IntRange(1, 3650), default=365, show_default=True)
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
def init(
    directory: Path | None,
    hub_hosts: tuple[str, ...],
    clusters: tuple[str, ...],
    users: tuple[str, ...],
    days: int,
    force: bool,
) -> None:
    """Write ca.crt, hub.crt/key, agent-CLUSTER.crt/key, token-USER and auth.yaml into --dir."""
    directory = directory or default_dir()
    specs = [UserSpec.parse(u) for u in users]
    p = Problems()
    for i, cluster in enumerate(clusters):
        check_name(p, f"--cluster[{i}]", cluster, label=False)
    try:
        p.raise_if_any()
        existing = [f for f in planned_files(list(clusters), specs) if (directory / f).exists()]
        if existing and not force:
            raise click.ClickException(
                f"{directory} already holds {', '.join(existing)}; use --force to overwrite"
            )
        init_certs(directory, hub_hosts, list(dict.fromkeys(clusters)), specs, days)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {', '.join(planned_files(list(clusters), specs))} to {directory}")
    for name in dict.fromkeys(s.name for s in specs):
        click.echo(f"token of {name}: {directory / f'token-{name}'}", file=sys.stdout)
