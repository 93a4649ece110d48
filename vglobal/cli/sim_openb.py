"""`vglobal sim openb`: the FGD experiment on the Alibaba GPU trace through our scheduler."""

from __future__ import annotations

import json
from pathlib import Path

import click

POLICY_NAMES = ("random", "bestfit", "binpack", "spread", "fgd")
_CSV = click.Path(dir_okay=False, path_type=Path)


@click.command("openb")
@click.option(
    "--nodes",
    "nodes_csv",
    type=_CSV,
    default=None,
    help="openb_node_list_*.csv (default ../shared/data/openb/openb_node_list_gpu_node.csv).",
)
@click.option(
    "--pods",
    "pods_csv",
    type=_CSV,
    default=None,
    help="openb_pod_list_*.csv (default ../shared/data/openb/openb_pod_list_default.csv).",
)
@click.option("--policy", type=click.Choice(POLICY_NAMES), required=True, help="fgd is ours.")
@click.option("--seed", type=int, default=42, show_default=True, help="Fixes the pod arrival order.")
@click.option("--target", type=float, default=1.3, show_default=True, help="Arrived GPU demand / capacity.")
@click.option(
    "--memory/--no-memory",
    default=True,
    show_default=True,
    help="Honour pod memory requests; --no-memory is the FGD paper's cpu+GPU-only model.",
)
@click.option("-o", "--output", "fmt", type=click.Choice(["json"]), default="json", show_default=True)
def openb(
    nodes_csv: Path | None,
    pods_csv: Path | None,
    policy: str,
    seed: int,
    target: float,
    memory: bool,
    fmt: str,
) -> None:
    """Place trace pods one at a time until arrived GPU demand reaches TARGET x capacity and print
    the GPU allocation ratio (%) at each percent of arrived demand. The CSV files are the Alibaba
    GPU trace's (cluster-trace-gpu-v2023 of github.com/alibaba/clusterdata)."""
    from vglobal.sim.openb import run_openb_files
    from vglobal.sim.traces import DATA, TraceMissing, need

    if target <= 0:
        raise click.BadParameter("must be > 0", param_hint="--target")
    try:
        nodes = need(nodes_csv or DATA / "openb" / "openb_node_list_gpu_node.csv", "openb")
        pods = need(pods_csv or DATA / "openb" / "openb_pod_list_default.csv", "openb")
    except TraceMissing as exc:
        raise click.ClickException(f"{exc} (or give --nodes and --pods)") from None
    result = run_openb_files(nodes, pods, policy, seed, target, memory)
    click.echo(json.dumps(result))
