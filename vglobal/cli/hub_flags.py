"""`vglobal hub` flags for TLS, agents' certificates, the auth config and the limits that hold under
abuse, and how a refused setting is told (never echoing the settings: the database URL has a password)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from vglobal.config import parse_rate

F = TypeVar("F", bound=Callable[..., Any])
FILE = click.Path(exists=True, dir_okay=False, path_type=Path)

_OPTIONS = [
    click.option("--tls-cert", type=FILE, default=None, help="The hub's certificate (PEM); serve TLS."),
    click.option("--tls-key", type=FILE, default=None, help="The key of --tls-cert."),
    click.option(
        "--client-ca",
        type=FILE,
        default=None,
        help="CA of agents' client certificates (URI SAN spiffe://vglobal/cluster/NAME).",
    ),
    click.option(
        "--agent-listen",
        default=None,
        help="HOST:PORT where agents connect with client certificates (mutual TLS).",
    ),
    click.option(
        "--auth-config",
        type=FILE,
        default=None,
        help="Users, tokens and roles (kind AuthConfig); SIGHUP reloads.",
    ),
    click.option("--insecure", is_flag=True, help="Allow plaintext or open access beyond loopback."),
    click.option(
        "--rate-limit", default="100/s", show_default=True, help="Calls per principal (N/s, N/m; 0 = off)."
    ),
    click.option("--rate-burst", type=click.IntRange(min=1), default=500, show_default=True),
    click.option(
        "--max-agent-streams",
        type=click.IntRange(min=1),
        default=1000,
        show_default=True,
        help="Open agent streams.",
    ),
    click.option("--max-tasks-per-job", type=click.IntRange(min=1), default=1000, show_default=True),
    click.option("--max-pods-per-job", type=click.IntRange(min=1), default=20000, show_default=True),
]


def security_options(f: F) -> F:
    for option in reversed(_OPTIONS):
        f = option(f)
    return f


def security_settings(values: dict[str, Any]) -> dict[str, Any]:
    """The flags as HubSettings fields; raises ValueError naming a bad one."""
    out = dict(values)
    out["rate_limit"] = parse_rate(values["rate_limit"])
    return out


def settings_error(exc: ValueError) -> str:
    """One line per problem, without the input values pydantic would echo."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    lines = []
    for e in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in e["loc"])
        msg = str(e["msg"]).removeprefix("Value error, ")
        lines.append(f"--{where.replace('_', '-')}: {msg}" if where else msg)
    return "; ".join(lines)
