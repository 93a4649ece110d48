"""`vglobal health`: one standard gRPC health check, exit 0 when SERVING.

Made for container probes: Kubernetes' own gRPC probe cannot speak TLS, so a probe runs this
inside the hub's container against its loopback. With a CA (the global --ca-file) the chain is
checked as usual; the name checked is --server-name, or else the one the hub's own certificate
carries, so the probe needs no setting that could drift from the certificate.
"""

from __future__ import annotations

import socket
import ssl
import sys
from pathlib import Path

import click
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


class HealthError(Exception):
    pass


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise HealthError(f"--hub: expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def presented_name(address: str, ca_file: Path, timeout: float) -> str:
    """The first DNS name (else IP address) of the certificate the server presents, after its chain
    has been verified against ca_file."""
    host, port = split_address(address)
    context = ssl.create_default_context(cafile=str(ca_file))
    context.check_hostname = False  # the name is what we are reading; the chain is still verified
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as raw,
            context.wrap_socket(raw) as tls,
        ):
            cert = tls.getpeercert() or {}
    except (OSError, ssl.SSLError) as exc:
        raise HealthError(f"TLS to {address}: {exc}") from exc
    alt_names = [tuple(entry) for entry in cert.get("subjectAltName", ())]
    for wanted in ("DNS", "IP Address"):
        for kind, value in alt_names:
            if kind == wanted:
                return str(value)
    raise HealthError(f"the certificate of {address} names no DNS name or IP address")


def check(address: str, ca_file: Path | None, server_name: str | None, service: str, timeout: float) -> str:
    """The serving status's name; raises HealthError when the server cannot be asked."""
    if ca_file is None:
        channel = grpc.insecure_channel(address)
    else:
        name = server_name or presented_name(address, ca_file, timeout)
        credentials = grpc.ssl_channel_credentials(root_certificates=ca_file.read_bytes())
        channel = grpc.secure_channel(address, credentials, options=[("grpc.ssl_target_name_override", name)])
    with channel:
        try:
            resp = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
        except grpc.RpcError as exc:
            code = exc.code()
            raise HealthError(f"{address}: {code.name}: {exc.details()}") from exc
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))


@click.command("health")
@click.option(
    "--server-name",
    default=None,
    help="The name the hub's certificate must carry (default: the name it presents, chain verified).",
)
@click.option("--service", default="", help="A service to check (default: the whole server).")
@click.option("--timeout", default="5s", show_default=True)
@click.pass_context
def health(ctx: click.Context, server_name: str | None, service: str, timeout: str) -> None:
    """Ask the hub's gRPC Health service; exit 0 when SERVING (for container probes).

    With the global --ca-file (or VGLOBAL_CA_FILE) over TLS, else plaintext; it needs no token.
    """
    from vglobal.model.duration import parse_duration

    address: str = ctx.obj.dial.target
    ca_file: Path | None = ctx.obj.dial.ca_file
    try:
        status = check(address, ca_file, server_name, service, parse_duration(timeout))
    except (HealthError, ValueError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(status)
    if status != "SERVING":
        sys.exit(1)
