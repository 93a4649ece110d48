"""`vglobal sim`: the agents' scheduler and job controller on simulated clusters, no hub needed."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vglobal.cli.sim_openb import openb


@click.group()
def sim() -> None:
    """Simulate clusters with a virtual clock."""


@sim.command("run")
@click.option(
    "--cluster",
    "clusters",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    multiple=True,
    required=True,
    help="SimCluster file; repeat for several clusters.",
)
@click.option(
    "--jobs",
    "jobs_path",
    type=click.Path(exists=True, path_type=Path),
    required=True,
    help="Job manifests: a file or a directory.",
)
@click.option("--scheduler-conf", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option("--until-idle", is_flag=True, default=False, help="Run until nothing can change (default).")
@click.option("--until", "until", default=None, help="Stop at this virtual time (Go duration, e.g. 10m).")
@click.option("-o", "--output", "fmt", type=click.Choice(["json"]), default="json", show_default=True)
def sim_run(
    clusters: tuple[Path, ...],
    jobs_path: Path,
    scheduler_conf: Path | None,
    until_idle: bool,
    until: str | None,
    fmt: str,
) -> None:
    """Run jobs on simulated clusters and print every job's phase and every pod's node."""
    from vglobal.model.duration import parse_duration
    from vglobal.sim.run import run_simulation

    result = run_simulation(
        cluster_files=list(clusters),
        jobs_path=jobs_path,
        scheduler_conf=scheduler_conf,
        until_idle=until is None or until_idle,
        until=parse_duration(until) if until else None,
    )
    print(json.dumps(result, indent=2))


sim.add_command(openb)
