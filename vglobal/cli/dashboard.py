"""``vglobal dashboard``: the web dashboard, a client of the hub acting with each caller's token."""

from __future__ import annotations

import secrets
from pathlib import Path

import click

from vglobal.cli.common import FILE, Ctx, err_console, fail


@click.command()
@click.option("--listen", default="127.0.0.1:8080", show_default=True, help="Serve the pages on HOST:PORT.")
@click.option(
    "--tls-cert", type=FILE, default=None, help="Serve HTTPS with this certificate (needed beyond loopback)."
)
@click.option("--tls-key", type=FILE, default=None, help="The --tls-cert's private key.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="Another name the pages are reached by (the Host header); loopback names and the --listen "
    "host are always allowed, any other is refused (421) against DNS rebinding.",
)
@click.option(
    "--no-login",
    is_flag=True,
    help="In front of an open hub (no auth config), let every caller in without the login token "
    "(loopback only).",
)
@click.pass_obj
def dashboard(
    ctx: Ctx,
    listen: str,
    tls_cert: Path | None,
    tls_key: Path | None,
    allowed_hosts: tuple[str, ...],
    no_login: bool,
) -> None:
    """Serve the web dashboard. It holds no privilege of its own: callers log in with their own
    token (or send Authorization: Bearer) and the hub decides every read and action."""
    from vglobal.dashboard.serve import ServeError, check, serve

    if ctx.dial.token:
        err_console.print("note: the dashboard does not use --token/VGLOBAL_TOKEN; each caller logs in")
    try:
        check(listen, tls_cert, tls_key, ctx.dial, no_login=no_login)
    except ServeError as exc:
        fail(str(exc))
    scheme = "https" if tls_cert else "http"
    err_console.print(f"dashboard on {scheme}://{listen} for the hub at {ctx.dial.target}")
    # A hub without an auth config knows no tokens: this one, made anew at each start and never
    # stored, is what logs in to the pages then (a hub with one takes its own tokens instead).
    login_token = "" if no_login else secrets.token_urlsafe(24)
    if login_token:
        err_console.print(
            f"if the hub is open (no auth config), log in at {scheme}://{listen}/login with this "
            f"login token: {login_token}",
            soft_wrap=True,
            highlight=False,
        )
    serve(
        listen,
        ctx.dial,
        tls_cert=tls_cert,
        tls_key=tls_key,
        hosts=allowed_hosts,
        login_token=login_token,
        no_login=no_login,
    )
