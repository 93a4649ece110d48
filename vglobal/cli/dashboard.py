"""``vglobal dashboard``: the web dashboard, a client of the hub acting with each caller's token."""

from __future__ import annotations

from pathlib import Path

import click

from vglobal.cli.common import FILE, Ctx, err_console, fail


@click.command()
@click.option("--listen", default="127.0.0.1:8080", show_default=True, help="Serve the pages on HOST:PORT.")
@click.option(
    "--tls-cert", type=FILE, default=None, help="Serve HTTPS with this certificate (needed beyond loopback)."
)
@click.option("--tls-key", type=FILE, default=None, help="The --tls-cert's private key.")
@click.pass_obj
def dashboard(ctx: Ctx, listen: str, tls_cert: Path | None, tls_key: Path | None) -> None:
    """Serve the web dashboard. It holds no privilege of its own: callers log in with their own
    token (or send Authorization: Bearer) and the hub decides every read and action."""
    from vglobal.dashboard.serve import ServeError, check, serve

    if ctx.dial.token:
        err_console.print("note: the dashboard does not use --token/VGLOBAL_TOKEN; each caller logs in")
    try:
        check(listen, tls_cert, tls_key, ctx.dial)
    except ServeError as exc:
        fail(str(exc))
    scheme = "https" if tls_cert else "http"
    err_console.print(f"dashboard on {scheme}://{listen} for the hub at {ctx.dial.target}")
    serve(listen, ctx.dial, tls_cert=tls_cert, tls_key=tls_key)
