"""A command's flags derived from a settings model (vglobal.config): one flag per field, its help
the field's description, and only the flags given on the command line passed on, so the
model's VGLOBAL_* environment variables and defaults apply to the rest (flag > env > default).
Refused settings and --print-settings never echo a secret (the database URL has a password)."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import click
from click.core import ParameterSource
from pydantic import BeforeValidator, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from vglobal.cli.common import fail
from vglobal.config import AS_SECONDS

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S", bound=BaseSettings)
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _extra(info: FieldInfo) -> dict[str, Any]:
    return info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}


def flag_name(model: type[BaseSettings], field: str) -> str:
    name = _extra(model.model_fields[field]).get("flag", field) if field in model.model_fields else field
    return "--" + str(name).replace("_", "-")


def env_name(model: type[BaseSettings], field: str) -> str:
    return f"{model.model_config.get('env_prefix', '')}{field}".upper()


def _bare(annotation: Any) -> Any:
    """``X | None`` as X."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _shown(info: FieldInfo, seconds: bool) -> str:
    value = info.get_default(call_default_factory=True)
    if value is None or value in ({}, ""):
        return "none"
    if seconds:
        return as_duration(float(value))
    return str(value).lower() if isinstance(value, bool) else str(value)


def as_duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _option(model: type[BaseSettings], field: str, info: FieldInfo) -> Callable[[F], F]:
    kind = _bare(info.annotation)
    seconds = AS_SECONDS in info.metadata
    text = f"{info.description or ''} [env {env_name(model, field)}; default {_shown(info, seconds)}]"
    flag = flag_name(model, field)
    # a field's former flag names, still accepted
    aliases = ["--" + a.replace("_", "-") for a in _extra(info).get("aliases", ())]
    if kind is bool:
        return click.option(f"{flag}/--no-{flag[2:]}", field, default=None, help=text)
    opts: dict[str, Any] = {"default": None, "help": text}
    if seconds:
        opts["metavar"] = "DURATION"
    elif typing.get_origin(kind) is typing.Literal:
        opts["type"] = click.Choice(typing.get_args(kind))
    elif kind is Path:
        opts["type"] = _FILE if _extra(info).get("file") else click.Path(path_type=Path)
    elif typing.get_origin(kind) is dict:
        opts.update(multiple=True, metavar="KEY=VALUE", default=())
    elif any(isinstance(m, BeforeValidator) for m in info.metadata):
        opts["metavar"] = "TEXT"  # the model parses it (a rate such as 100/s)
    elif kind in (int, float):
        opts["type"] = kind
    return click.option(flag, *aliases, field, **opts)


def settings_options(model: type[BaseSettings]) -> Callable[[F], F]:
    """Decorate a command with one flag per field of ``model``, in the model's order."""

    def decorate(f: F) -> F:
        for field, info in reversed(model.model_fields.items()):
            f = _option(model, field, info)(f)
        return f

    return decorate


def given(ctx: click.Context, model: type[BaseSettings]) -> dict[str, Any]:
    """The fields of ``model`` set by a flag on the command line."""
    return {
        field: ctx.params[field]
        for field in model.model_fields
        if ctx.get_parameter_source(field) is ParameterSource.COMMANDLINE
    }


def load(ctx: click.Context, model: type[S]) -> S:
    """The effective settings: the flags given, then the environment, then the defaults."""
    try:
        return model(**given(ctx, model))
    except ValueError as exc:
        fail(settings_error(exc, model))


def run_or_print(ctx: click.Context, model: type[S], print_settings: bool) -> S | None:
    """The settings to run with, or None once ``--print-settings`` has printed them."""
    settings = load(ctx, model)
    if not print_settings:
        return settings
    click.echo(settings_json(settings))
    return None


def settings_error(exc: ValueError, model: type[BaseSettings] | None = None) -> str:
    """One line per problem, without the input values pydantic would echo."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    lines = []
    for e in exc.errors(include_input=False, include_url=False):
        field = str(e["loc"][0]) if e["loc"] else ""
        msg = str(e["msg"]).removeprefix("Value error, ")
        if not field:
            lines.append(msg)
            continue
        where = flag_name(model, field) if model else "--" + field.replace("_", "-")
        if model is not None:
            where += f" (env {env_name(model, field)})"
        lines.append(f"{where}: {msg}")
    return "; ".join(lines)


def _redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def settings_json(settings: BaseSettings) -> str:
    """The settings as JSON, secrets redacted."""
    out = settings.model_dump(mode="json")
    for field, info in type(settings).model_fields.items():
        if _extra(info).get("secret") and isinstance(out.get(field), str):
            out[field] = _redact_url(out[field])
    return json.dumps(out, indent=2, sort_keys=False)
