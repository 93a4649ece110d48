"""`vglobal job suspend|resume NAME`: vcctl's job suspend and resume."""

from __future__ import annotations

import click

from vglobal.cli.common import Ctx, console, fail
from vglobal.client import VGlobalError


@click.group("job")
def job_group() -> None:
    """Suspend or resume a job (as `vcctl job suspend|resume`)."""


@job_group.command()
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def suspend(obj: Ctx, name: str, namespace: str) -> None:
    """Stop a job where it runs and keep it, Aborted, until `vglobal job resume`."""
    try:
        j = obj.client.suspend_job(name, namespace)
    except VGlobalError as exc:
        fail(str(exc))
    console.print(f"job.batch.volcano.sh/{j.namespace}/{j.name} suspended ({j.phase})", highlight=False)


@job_group.command()
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def resume(obj: Ctx, name: str, namespace: str) -> None:
    """Put a suspended job back in its queue; it runs again as a new run (a new generation)."""
    try:
        j = obj.client.resume_job(name, namespace)
    except VGlobalError as exc:
        fail(str(exc))
    console.print(f"job.batch.volcano.sh/{j.namespace}/{j.name} resumed ({j.phase})", highlight=False)
