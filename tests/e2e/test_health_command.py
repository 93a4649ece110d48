"""`vglobal health`, the probe command of deploy/hub: against a real hub, and over TLS against a
standard gRPC health server with certificates made here (the hub's own TLS is configured by its
flags; the probe only needs a server that speaks TLS and the Health protocol)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from tests.e2e.harness import System, free_port

pytestmark = pytest.mark.e2e


def probe(address: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``vglobal --hub ADDRESS [--ca-file F] health ARGS`` (--ca-file is a global option)."""
    rest = list(args)
    tls: list[str] = []
    if "--ca-file" in rest:
        at = rest.index("--ca-file")
        tls, rest[at : at + 2] = rest[at : at + 2], []
    return subprocess.run(
        [sys.executable, "-m", "vglobal", "--hub", address, *tls, "health", *rest],
        check=False,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_health_of_a_real_hub(system: System) -> None:
    system.start_hub()
    ok = probe(system.target)
    assert (ok.returncode, ok.stdout.strip()) == (0, "SERVING"), ok.stderr
    jobs = probe(system.target, "--service", "vglobal.v1.JobService")
    assert (jobs.returncode, jobs.stdout.strip()) == (0, "SERVING"), jobs.stderr
    unknown = probe(system.target, "--service", "no.such.Service")
    assert unknown.returncode == 1 and "NOT_FOUND" in unknown.stderr
    system.kill("hub")
    gone = probe(system.target, "--timeout", "2s")
    assert gone.returncode == 1 and "UNAVAILABLE" in gone.stderr


# ---------------------------------------------------------------- TLS


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
    sans: list[x509.GeneralName],
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class TlsServer:
    address: str
    ca_file: Path
    other_ca_file: Path
    health: health.HealthServicer


def _serve(tmp: Path, sans: list[x509.GeneralName]) -> Iterator[TlsServer]:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test CA", ca_key, None, [])
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert("hub", server_key, ("test CA", ca_key), sans)
    other_key = ec.generate_private_key(ec.SECP256R1())
    (tmp / "ca.crt").write_bytes(_pem(ca))
    (tmp / "other-ca.crt").write_bytes(_pem(_cert("other CA", other_key, None, [])))
    key_pem = server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, grpc_server)
    address = f"127.0.0.1:{free_port()}"
    grpc_server.add_secure_port(address, grpc.ssl_server_credentials([(key_pem, _pem(server))]))
    grpc_server.start()
    try:
        yield TlsServer(address, tmp / "ca.crt", tmp / "other-ca.crt", servicer)
    finally:
        grpc_server.stop(grace=None)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[TlsServer]:
    # The certificate names the hub's public host only, as `certs init --hub-host` would write it.
    yield from _serve(tmp_path, [x509.DNSName("hub.vglobal.example")])


def test_tls_probe_verifies_the_chain_and_reads_the_name_from_the_certificate(tls_server: TlsServer) -> None:
    ok = probe(tls_server.address, "--ca-file", str(tls_server.ca_file))
    assert (ok.returncode, ok.stdout.strip()) == (0, "SERVING"), ok.stderr
    named = probe(
        tls_server.address, "--ca-file", str(tls_server.ca_file), "--server-name", "hub.vglobal.example"
    )
    assert named.returncode == 0, named.stderr


def test_tls_probe_refuses_a_certificate_from_another_ca(tls_server: TlsServer) -> None:
    bad = probe(tls_server.address, "--ca-file", str(tls_server.other_ca_file))
    assert bad.returncode == 1 and "certificate verify failed" in bad.stderr


def test_tls_probe_refuses_a_certificate_for_another_name(tls_server: TlsServer) -> None:
    bad = probe(
        tls_server.address,
        "--ca-file",
        str(tls_server.ca_file),
        "--server-name",
        "evil.example",
        "--timeout",
        "2s",
    )
    assert bad.returncode == 1 and "UNAVAILABLE" in bad.stderr


def test_plaintext_probe_to_a_tls_port_fails(tls_server: TlsServer) -> None:
    bad = probe(tls_server.address, "--timeout", "2s")
    assert bad.returncode == 1 and "UNAVAILABLE" in bad.stderr


def test_tls_probe_fails_when_the_server_is_not_serving(tls_server: TlsServer) -> None:
    tls_server.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    down = probe(tls_server.address, "--ca-file", str(tls_server.ca_file))
    assert (down.returncode, down.stdout.strip()) == (1, "NOT_SERVING")


def test_tls_probe_reads_an_ip_address_name(tmp_path: Path) -> None:
    for server in _serve(tmp_path, [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]):
        ok = probe(server.address, "--ca-file", str(server.ca_file))
        assert (ok.returncode, ok.stdout.strip()) == (0, "SERVING"), ok.stderr


def test_the_ca_file_comes_from_the_environment_too(tls_server: TlsServer) -> None:
    ok = probe(tls_server.address, env={"VGLOBAL_CA_FILE": str(tls_server.ca_file)})
    assert (ok.returncode, ok.stdout.strip()) == (0, "SERVING"), ok.stderr
