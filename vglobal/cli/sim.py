"""`vglobal sim`: the hub's admission and the agents' code on simulated clusters, no hub process."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vglobal.cli.settings_flags import as_duration
from vglobal.cli.sim_openb import openb
from vglobal.model.admission_policy import HUB_POLICY, PLACEMENTS, AdmissionPolicy
from vglobal.model.placement_config import PlacementConfig, load_placement_config

_POLICY = HUB_POLICY  # the hub's defaults


@click.group()
def sim() -> None:
    """Simulate clusters with a virtual clock."""


def _duration(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    from vglobal.model.duration import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@sim.command("run")
@click.option(
    "--cluster", "clusters", type=_FILE, multiple=True, required=True, help="SimCluster file; repeat."
)
@click.option(
    "--jobs",
    "jobs_path",
    type=click.Path(exists=True, path_type=Path),
    required=True,
    help="Jobs, Queues and PriorityClasses: a file or a directory.",
)
@click.option("--scheduler-conf", type=_FILE, default=None, help="The agents' volcano-scheduler.conf.")
@click.option("--until-idle", is_flag=True, default=False, help="Run until nothing can change (default).")
@click.option("--until", callback=_duration, default=None, help="Stop at this virtual time (e.g. 10m).")
@click.option("--placement", type=click.Choice(PLACEMENTS), default=_POLICY.placement, show_default=True)
@click.option(
    "--starvation-after", callback=_duration, default=as_duration(_POLICY.starvation_after), show_default=True
)
@click.option(
    "--reclaim-after", callback=_duration, default=as_duration(_POLICY.reclaim_after), show_default=True
)
@click.option(
    "--reclaim-min-runtime",
    callback=_duration,
    default=as_duration(_POLICY.reclaim_min_runtime),
    show_default=True,
)
@click.option(
    "--fair-share-half-life",
    callback=_duration,
    default=as_duration(_POLICY.fair_share_half_life),
    show_default=True,
    help="Order queues by their usage decayed with this half-life (0 = by what they hold now).",
)
@click.option(
    "--reclaim-limit",
    type=click.FloatRange(min=0),
    default=_POLICY.reclaim_limit,
    show_default=True,
    help="Reclaim takes from a queue at most this fraction of what it runs per --reclaim-interval "
    "(0 = no limit).",
)
@click.option("--reclaim-interval", callback=_duration, default="10m", show_default=True)
@click.option(
    "--reclaim-rule",
    type=click.Choice(["share", "worth"]),
    default=_POLICY.reclaim_rule,
    show_default=True,
    help="worth: reclaim weighs victims' lost work against the reclaimer's gain, protected and "
    "near-share queues left alone.",
)
@click.option(
    "--protected-fraction",
    type=click.FloatRange(min=0),
    default=_POLICY.protected_fraction,
    show_default=True,
)
@click.option(
    "--reclaim-margin", type=click.FloatRange(min=0), default=_POLICY.reclaim_margin, show_default=True
)
@click.option(
    "--reclaim-horizon", callback=_duration, default=as_duration(_POLICY.reclaim_horizon), show_default=True
)
@click.option(
    "--claim-timeout",
    callback=_duration,
    default=as_duration(_POLICY.claim_timeout),
    show_default=True,
    help="Room freed by victims stays claimed for the job they were taken for until its pods bind "
    "or this long.",
)
@click.option(
    "--keep-accelerators/--no-keep-accelerators",
    default=_POLICY.keep_accelerators,
    show_default=True,
    help="Jobs asking for no GPU (or other accelerator) go to clusters without one while those hold them.",
)
@click.option(
    "--bind-timeout",
    callback=_duration,
    default=None,
    help="An agent hands back a gang it could not place this long (default: never).",
)
@click.option(
    "--placement-config",
    type=_FILE,
    default=None,
    help="The hub's placement file: cluster taints, where datasets live, costs (README: Placement).",
)
@click.option("-o", "--output", "fmt", type=click.Choice(["json"]), default="json", show_default=True)
def sim_run(
    clusters: tuple[Path, ...],
    jobs_path: Path,
    scheduler_conf: Path | None,
    until_idle: bool,
    until: float | None,
    placement: str,
    starvation_after: float,
    reclaim_after: float,
    reclaim_min_runtime: float,
    fair_share_half_life: float,
    reclaim_limit: float,
    reclaim_interval: float,
    reclaim_rule: str,
    protected_fraction: float,
    reclaim_margin: float,
    reclaim_horizon: float,
    claim_timeout: float,
    keep_accelerators: bool,
    bind_timeout: float | None,
    placement_config: Path | None,
    fmt: str,
) -> None:
    """Run jobs through the hub's admission and the agents' scheduler and job controller on
    simulated clusters; print every job's phase, cluster and pods, and each queue's allocation."""
    from vglobal.sim.dispatch import Rules
    from vglobal.sim.federation import SimulationError
    from vglobal.sim.inputs import SimInputError
    from vglobal.sim.run import run_simulation

    policy = AdmissionPolicy(
        placement=placement,
        starvation_after=starvation_after,
        reclaim_after=reclaim_after,
        reclaim_min_runtime=reclaim_min_runtime,
        fair_share_half_life=fair_share_half_life,
        reclaim_limit=reclaim_limit,
        reclaim_rule=reclaim_rule,
        protected_fraction=protected_fraction,
        reclaim_margin=reclaim_margin,
        reclaim_horizon=reclaim_horizon,
        claim_timeout=claim_timeout,
        keep_accelerators=keep_accelerators,
        placement_config=_placement_config(placement_config),
    )
    rules = Rules(policy, reclaim_interval=reclaim_interval)
    try:
        result = run_simulation(
            cluster_files=list(clusters),
            jobs_path=jobs_path,
            scheduler_conf=scheduler_conf,
            until_idle=until is None or until_idle,
            until=until,
            rules=rules,
            bind_timeout=bind_timeout,
        )
    except (SimInputError, SimulationError) as exc:
        raise click.ClickException(str(exc)) from None
    if skipped := result.get("skipped"):
        click.echo(
            f"skipped {len(skipped)} objects a simulation does not replay (it runs Jobs, Queues and "
            f"PriorityClasses; CronJobs, JobTemplates and JobFlows make their Jobs at the hub): "
            + "; ".join(skipped),
            err=True,
        )
    click.echo(json.dumps(result, indent=2))


sim.add_command(openb)


def _placement_config(path: Path | None) -> PlacementConfig:
    try:
        return load_placement_config(path)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--placement-config") from e
