"""Why a plaintext call could not reach the hub: when the hub speaks TLS, gRPC only says the
connection closed. One TLS handshake with the hub tells which, and the error then says what to do."""

from __future__ import annotations

import socket
import ssl

from vglobal.dial import split_host

PROBE_TIMEOUT = 2.0


def speaks_tls(target: str, *, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the server at ``target`` (HOST:PORT) answers a TLS handshake (its certificate is not
    checked: this only asks which protocol it speaks)."""
    host = split_host(target)
    port = target.rsplit(":", 1)[-1]
    if not port.isdigit():
        return False
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((host, int(port)), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=host or None),
        ):
            return True
    except ssl.SSLError as exc:
        # A server asking for a client certificate still answered in TLS.
        return "CERTIFICATE" in str(exc).upper()
    except OSError:
        return False


def plaintext_hint(target: str) -> str:
    """What to add to an UNAVAILABLE error of a plaintext client ("" when the hub is not TLS)."""
    if not speaks_tls(target):
        return ""
    return (
        f" (the hub at {target} speaks TLS and this client dialled it in plaintext: give --ca-file "
        "CA.crt, or set VGLOBAL_CA_FILE, with the CA that signed the hub's certificate, e.g. the ca.crt "
        "`vglobal certs init` wrote, and --token-file or --cert/--key as the hub asks)"
    )
