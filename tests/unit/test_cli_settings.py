"""`vglobal hub` and `vglobal agent` settings: every field by flag and by environment variable, a flag
beating the environment, as the real command line resolves them (``--print-settings``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic_settings import BaseSettings

from vglobal.cli.main import cli, register_extras
from vglobal.cli.settings_flags import env_name, flag_name
from vglobal.config import AS_SECONDS, AgentSettings, HubSettings
from vglobal.model.admission_policy import HUB_POLICY, AdmissionPolicy

register_extras()
COMMANDS: list[tuple[str, type[BaseSettings]]] = [("hub", HubSettings), ("agent", AgentSettings)]
DB = "postgresql://u:hunter2@db.example/vg"


def _sample(tmp: Path, model: type[BaseSettings], field: str) -> tuple[list[str], str, Any]:
    """A value other than the default: (flag arguments, environment text, effective JSON value)."""
    info = model.model_fields[field]
    flag = flag_name(model, field)
    default = info.get_default(call_default_factory=True)
    kind = info.annotation
    if AS_SECONDS in info.metadata:
        v = float(default) + 90
        return [flag, f"{v:g}s"], f"{v:g}", v
    if field == "rate_limit":
        return [flag, "120/m"], "120/m", 2.0
    if kind is bool and default is True:  # an on-by-default switch is turned off
        return [f"--no-{flag[2:]}"], "false", False
    if kind is bool:
        return [flag], "true", True
    if kind is int:
        return [flag, str(default + 3)], str(default + 3), default + 3
    if kind is float:
        return [flag, str(default + 1.5)], str(default + 1.5), default + 1.5
    if typing.get_origin(kind) is typing.Literal:
        other = next(c for c in typing.get_args(kind) if c != default)
        return [flag, other], other, other
    if field == "labels":
        return [flag, "a=b", flag, "c=d"], "a=b,c=d", {"a": "b", "c": "d"}
    if field == "database_url":
        return [flag, DB], DB, "postgresql://u:***@db.example/vg"
    if Path in (kind, *typing.get_args(kind)):
        path = tmp / f"{field}.file"
        path.write_text("{}" if field == "placement_config" else "x")  # a placement file is read at once
        return [flag, str(path)], str(path), str(path)
    if field in ("listen", "agent_listen"):
        return [flag, "127.0.0.1:4242"], "127.0.0.1:4242", "127.0.0.1:4242"
    return [flag, f"v-{field}"], f"v-{field}", f"v-{field}"


def _base(tmp: Path, model: type[BaseSettings], but: str) -> list[str]:
    """Flags satisfying the hub's cross-field rules (TLS pairs, agents' port), except field ``but``."""
    if model is not HubSettings:
        return []
    out: list[str] = []
    for field in ("tls_cert", "tls_key", "client_ca", "auth_config"):
        if field != but:
            path = tmp / f"base-{field}"
            path.write_text("x")
            out += [flag_name(model, field), str(path)]
    if but != "agent_listen":
        out += ["--agent-listen", "127.0.0.1:4343"]
    return out


def _effective(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    clean = {k: None for k in os.environ if k.startswith("VGLOBAL_")}
    out = CliRunner().invoke(cli, [*args, "--print-settings"], env={**clean, **env})
    assert out.exit_code == 0, out.output
    return dict(json.loads(out.stdout))


def _cases() -> list[tuple[str, type[BaseSettings], str]]:
    return [(cmd, model, field) for cmd, model in COMMANDS for field in model.model_fields]


@pytest.mark.parametrize(("command", "model", "field"), _cases())
def test_every_field_by_flag_and_by_environment(
    tmp_path: Path, command: str, model: type[BaseSettings], field: str
) -> None:
    flag_args, env_text, expected = _sample(tmp_path, model, field)
    default = model.model_fields[field].get_default(call_default_factory=True)
    assert json.loads(json.dumps(default, default=str)) != expected, "the sample must differ from the default"
    by_flag = _effective([command, *_base(tmp_path, model, field), *flag_args], {})
    assert by_flag[field] == expected
    by_env = _effective([command, *_base(tmp_path, model, field)], {env_name(model, field): env_text})
    assert by_env == by_flag


@pytest.mark.parametrize(
    ("command", "env", "flags", "field", "expected"),
    [
        (
            "hub",
            {"VGLOBAL_DISPATCH_INTERVAL": "7"},
            ["--dispatch-interval", "250ms"],
            "dispatch_interval",
            0.25,
        ),
        ("hub", {"VGLOBAL_PLACEMENT": "spread"}, ["--placement", "binpack"], "placement", "binpack"),
        ("hub", {"VGLOBAL_RATE_LIMIT": "5"}, ["--rate-limit", "60/m"], "rate_limit", 1.0),
        ("hub", {"VGLOBAL_INSECURE": "true"}, ["--no-insecure"], "insecure", False),
        ("agent", {"VGLOBAL_AGENT_BIND_TIMEOUT": "5m"}, ["--bind-timeout", "10s"], "bind_timeout", 10.0),
        ("agent", {"VGLOBAL_AGENT_LABELS": "a=b"}, ["--label", "c=d"], "labels", {"c": "d"}),
        ("agent", {"VGLOBAL_AGENT_NAME": "env"}, ["--name", "flag"], "name", "flag"),
    ],
)
def test_a_flag_beats_the_environment(
    command: str, env: dict[str, str], flags: list[str], field: str, expected: Any
) -> None:
    assert _effective([command], env)[field] != expected
    assert _effective([command, *flags], env)[field] == expected


@pytest.mark.parametrize(("command", "model"), COMMANDS)
def test_the_help_is_the_fields_description(command: str, model: type[BaseSettings]) -> None:
    text = " ".join(CliRunner().invoke(cli, [command, "--help"]).output.split())
    squeezed = text.replace(" ", "")
    for field, info in model.model_fields.items():
        assert info.description, f"{field} has no description"
        flag = flag_name(model, field)
        assert (f"{flag} " in text or f"{flag}, " in text) and "".join(info.description.split()) in squeezed, field
        assert env_name(model, field) in text


def test_the_console_script_reads_the_environment_and_redacts_the_password() -> None:
    env = {**os.environ, "VGLOBAL_DISPATCH_INTERVAL": "7", "VGLOBAL_DATABASE_URL": DB}
    res = subprocess.run(
        [sys.executable, "-m", "vglobal", "hub", "--print-settings"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    settings = json.loads(res.stdout)
    assert settings["dispatch_interval"] == 7.0 and "hunter2" not in res.stdout + res.stderr
    assert settings["database_url"] == "postgresql://u:***@db.example/vg"


def test_a_bad_environment_value_names_the_flag_and_the_variable() -> None:
    out = CliRunner().invoke(cli, ["hub", "--print-settings"], env={"VGLOBAL_DISPATCH_INTERVAL": "soon"})
    assert out.exit_code == 1
    assert "--dispatch-interval (env VGLOBAL_DISPATCH_INTERVAL): invalid duration" in out.output


@pytest.mark.parametrize(
    ("flags", "env"),
    [
        (["--max-admissions-per-cycle", "7"], {}),
        ([], {"VGLOBAL_MAX_ADMISSIONS_PER_CYCLE": "7"}),
        (["--max-admissions", "7"], {"VGLOBAL_MAX_ADMISSIONS_PER_CYCLE": "9"}),
    ],
)
def test_the_admissions_budget_keeps_its_former_flag_and_variable(flags: list[str], env: dict[str, str]) -> None:
    assert _effective(["hub", *flags], env)["max_admissions"] == 7


def test_the_hub_admission_settings_are_the_admission_policy_with_its_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for k in list(os.environ):
        if k.startswith("VGLOBAL_"):
            monkeypatch.delenv(k)
    assert HubSettings().admission_policy() == HUB_POLICY
    # the hub's defaults are the core's but for the reclaim rule measured on the Philly trace
    assert replace(HUB_POLICY, reclaim_rule="share", reclaim_margin=0.1, reclaim_horizon=3600.0) == AdmissionPolicy()
    policy = HubSettings(placement="spread", max_admissions=0, queue_lookback=3).admission_policy()
    assert policy == replace(HUB_POLICY, placement="spread", max_admissions=0, queue_lookback=3)
