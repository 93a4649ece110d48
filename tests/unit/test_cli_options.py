"""The command line: global options after any subcommand, and the agent's choice of cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from vglobal.cli.global_options import GlobalOptionsGroup, hoist
from vglobal.cli.main import cli, register_extras

register_extras()


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _paths(cmd, (*prefix, name))
        else:
            yield (*prefix, name)


def test_the_hub_flag_may_follow_every_subcommand() -> None:
    paths = list(_paths(cli))
    assert ("agent",) in paths and ("queue", "open") in paths and ("sim", "run") in paths
    for path in paths:
        args = [*path, "NAME", "--hub", "h:1", "-o", "json"]
        assert hoist(cli, args) == ["--hub", "h:1", *path, "NAME", "-o", "json"], path
        assert hoist(cli, [*path, "--hub=h:2"]) == ["--hub=h:2", *path], path


def test_options_before_the_subcommand_and_after_a_double_dash_stay_put() -> None:
    assert hoist(cli, ["--hub", "h:1", "get", "jobs"]) == ["--hub", "h:1", "get", "jobs"]
    assert hoist(cli, ["apply", "-f", "x", "--", "--hub", "h"]) == ["apply", "-f", "x", "--", "--hub", "h"]


def test_a_subcommand_option_of_the_same_name_is_the_subcommand_s() -> None:
    @click.group(cls=GlobalOptionsGroup)
    @click.option("--hub")
    @click.option("--quiet", is_flag=True)
    def root(hub: str | None, quiet: bool) -> None:
        pass

    @root.command()
    @click.option("--hub")
    def own(hub: str | None) -> None:
        pass

    @root.command()
    def other() -> None:
        pass

    assert hoist(root, ["own", "--hub", "x", "--quiet"]) == ["--quiet", "own", "--hub", "x"]
    assert hoist(root, ["other", "--quiet"]) == ["--quiet", "other"]


def test_the_hub_after_the_subcommand_is_the_one_used() -> None:
    # nothing listens on port 9 of loopback: the error names the address given after "get"
    out = CliRunner().invoke(cli, ["get", "clusters", "--hub", "127.0.0.1:9"])
    assert out.exit_code != 0 and "127.0.0.1:9" in out.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kubeconfig", "{kc}"], "exclusive"),
        (["--in-cluster"], "exclusive"),
        ([], None),
    ],
)
def test_the_agent_runs_one_cluster_simulated_or_real(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str | None
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\n")
    sim = tmp_path / "c.yaml"
    sim.write_text("kind: SimCluster\n")
    if message is None:
        out = CliRunner().invoke(cli, ["agent"])
        assert out.exit_code != 0 and "one of --sim FILE, --kubeconfig PATH or --in-cluster" in out.output
        return
    out = CliRunner().invoke(cli, ["agent", "--sim", str(sim), *[a.format(kc=kc) for a in args]])
    assert out.exit_code != 0 and message in out.output
