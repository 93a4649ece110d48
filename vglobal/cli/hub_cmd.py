"""``vglobal hub``: run a hub (gRPC API, dispatcher, failover) on an embedded or external Postgres.
Its flags are HubSettings' fields (vglobal.config)."""

from __future__ import annotations

from functools import partial
from typing import Any

import click

from vglobal.cli.common import define_kinds, setup_logging
from vglobal.cli.settings_flags import run_or_print, settings_options
from vglobal.config import HubSettings

PRINT_SETTINGS = click.option(
    "--print-settings",
    is_flag=True,
    help="Print the effective settings (flags, then VGLOBAL_* environment, then defaults) as JSON, "
    "secrets redacted, and exit.",
)


@click.command()
@settings_options(HubSettings)
@PRINT_SETTINGS
@click.option("-v", "--verbose", is_flag=True)
@click.pass_context
def hub(ctx: click.Context, /, print_settings: bool, verbose: bool, **_: Any) -> None:
    """Run a hub (gRPC API, dispatcher, failover) on an embedded or external Postgres."""
    settings = run_or_print(ctx, HubSettings, print_settings)
    if settings is None:
        return
    from vglobal.hub.ports import PortInUse
    from vglobal.hub.server import run_hub

    setup_logging(verbose)
    if settings.kinds_file is not None:
        define_kinds(settings.kinds_file)  # checked here, to say what is wrong before anything starts
    try:
        run_hub(settings, log_setup=partial(setup_logging, verbose))  # also the API processes' logs
    except PortInUse as exc:
        raise click.ClickException(str(exc)) from None
