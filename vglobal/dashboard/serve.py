"""Serving the dashboard with uvicorn: plaintext only on loopback, HTTPS with --tls-cert/--tls-key,
and bounded: slow or idle connections closed, headers and bodies capped, connections capped."""

from __future__ import annotations

import logging
from pathlib import Path

import uvicorn

from vglobal.dashboard.app import create_app
from vglobal.dashboard.guards import allowed_hosts
from vglobal.dial import Dial, is_loopback, split_host

# The limits the README's Security section states.
KEEP_ALIVE_SECONDS = 5  # an idle kept-alive connection is closed after this
MAX_HEADER_BYTES = 64 * 1024  # a request's line and headers still arriving (h11); guards.py caps them whole
MAX_CONNECTIONS = 1000  # open connections and requests at once; past it, 503
BACKLOG = 256


class ServeError(ValueError):
    """Settings the dashboard will not serve with; the message names the flag."""


def check(
    listen: str, tls_cert: Path | None, tls_key: Path | None, dial: Dial, *, no_login: bool = False
) -> tuple[str, int]:
    """The host and port to bind, after the refusals: TLS files in pairs, no plaintext beyond
    loopback, no callers' tokens in plaintext to a remote hub, no --no-login beyond loopback."""
    if no_login and not is_loopback(listen):
        raise ServeError(f"--no-login: only on loopback, and {listen} is not")
    if (tls_cert is None) != (tls_key is None):
        raise ServeError("--tls-cert and --tls-key go together")
    if tls_cert is None and not is_loopback(listen):
        raise ServeError(
            f"refusing to serve the dashboard in plaintext on {listen}: sessions and tokens would "
            "cross the network in the clear; give --tls-cert and --tls-key, or listen on 127.0.0.1"
        )
    host, _, port = listen.rpartition(":")
    if not port.isdigit():
        raise ServeError(f"--listen: {listen!r} is not HOST:PORT")
    if not dial.tls and not is_loopback(dial.target):
        raise ServeError(
            f"--hub {dial.target}: callers' tokens would go to the hub in plaintext; give --ca-file"
        )
    return split_host(host) if host else "127.0.0.1", int(port)


def serve(
    listen: str,
    dial: Dial,
    *,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
    hosts: tuple[str, ...] = (),
    login_token: str = "",
    no_login: bool = False,
) -> None:
    host, port = check(listen, tls_cert, tls_key, dial, no_login=no_login)
    app = create_app(
        dial,
        tls=tls_cert is not None,
        hosts=allowed_hosts(host, hosts),
        login_token=login_token,
        no_login=no_login,
    )
    # The access log names paths and query strings, which hold no secret (tokens travel only in
    # request bodies and headers); uvicorn never logs headers.
    logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    uvicorn.run(
        app,
        host=host,
        port=port,
        ssl_certfile=str(tls_cert) if tls_cert else None,
        ssl_keyfile=str(tls_key) if tls_key else None,
        log_level="info",
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        limit_concurrency=MAX_CONNECTIONS,
        backlog=BACKLOG,
    )
