"""A client and a hub that disagree on TLS: the CLI says so in one line of its own, what to change,
and none of gRPC's C-core log lines (a failed handshake's ``ssl_transport_security.cc`` lines).
The servers are standard gRPC servers on the certificates `vglobal certs init` writes: the mismatch
is the channel's, before any of the hub's services answers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2_grpc

from tests.e2e.harness import free_port

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("certs")
    subprocess.run(
        [sys.executable, "-m", "vglobal", "certs", "init", "--dir", str(out), "--hub-host", "127.0.0.1",
         "--user", "ada:admin"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return out


def _serve(certs: Path | None) -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    address = f"127.0.0.1:{free_port()}"
    if certs is None:
        server.add_insecure_port(address)
    else:
        pair = ((certs / "hub.key").read_bytes(), (certs / "hub.crt").read_bytes())
        server.add_secure_port(address, grpc.ssl_server_credentials([pair]))
    server.start()
    try:
        yield address
    finally:
        server.stop(grace=None)


def _get_jobs(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VGLOBAL_", "GRPC_"))}
    return subprocess.run(
        [sys.executable, "-m", "vglobal", "--hub", address, *args, "get", "jobs"],
        check=False, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_tls_client_against_a_plaintext_hub_gets_one_line_saying_so(certs: Path) -> None:
    for address in _serve(None):
        res = _get_jobs(address, "--ca-file", str(certs / "ca.crt"))
        assert res.returncode == 1 and not res.stdout
        assert res.stderr.splitlines() == [
            f"error: UNAVAILABLE: the hub at {address} speaks plaintext and this client dialled it with TLS "
            "(--ca-file or VGLOBAL_CA_FILE is set): unset them for a plaintext hub on loopback, or start "
            "the hub with --tls-cert and --tls-key"
        ], res.stderr


def test_a_plaintext_client_against_a_tls_hub_gets_one_line_saying_so(certs: Path) -> None:
    for address in _serve(certs):
        res = _get_jobs(address)
        assert res.returncode == 1 and not res.stdout
        (line,) = res.stderr.splitlines()
        assert line.startswith("error: UNAVAILABLE: ") and "ssl_transport_security" not in line
        assert f"the hub at {address} speaks TLS and this client dialled it in plaintext" in line
