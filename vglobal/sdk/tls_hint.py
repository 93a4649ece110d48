"""Why a call could not reach the hub when client and hub disagree on TLS: gRPC only says the
connection closed (a plaintext client) or prints a handshake's library error (a TLS client). One TLS
handshake with the hub tells which, and the error then says what to do."""

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


def tls_mismatch(target: str, details: str) -> str:
    """The whole message of an UNAVAILABLE error of a TLS client whose handshake failed because the
    hub speaks plaintext ("" when that is not the cause)."""
    if "handshake failed" not in details.lower() or speaks_tls(target):
        return ""
    return (
        f"the hub at {target} speaks plaintext and this client dialled it with TLS (--ca-file or "
        "VGLOBAL_CA_FILE is set): unset them for a plaintext hub on loopback, or start the hub with "
        "--tls-cert and --tls-key"
    )
