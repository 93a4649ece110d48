"""`vglobal job suspend|resume NAME`: vcctl's job suspend and resume; `vglobal checkpoint NAME`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import click

from vglobal.api.v1 import jobs_pb2
from vglobal.cli.common import Ctx, console, fail
from vglobal.model.kinds import printed_as
from vglobal.sdk import Client, VGlobalError


@click.group("job")
def job_group() -> None:
    """Suspend or resume a job (as `vcctl job suspend|resume`)."""


def _job_command(action: str, doc: str, call: Callable[[Client, str, str], jobs_pb2.Job], said: str) -> None:
    @job_group.command(action, help=doc)
    @click.argument("name")
    @click.option("-n", "--namespace", default="default", show_default=True)
    @click.pass_obj
    def command(obj: Ctx, name: str, namespace: str) -> None:
        try:
            j = call(obj.client, name, namespace)
        except VGlobalError as exc:
            fail(str(exc))
        console.print(f"{printed_as(j.kind, j.namespace, j.name)} {said} ({j.phase})", highlight=False)


_job_command(
    "suspend",
    "Stop a job where it runs and keep it, Aborted, until `vglobal job resume`.",
    Client.suspend_job,
    "suspended",
)
_job_command(
    "resume",
    "Put a suspended job back in its queue; it runs again as a new run (a new generation).",
    Client.resume_job,
    "resumed",
)


@click.command("checkpoint")
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--at", "at", default=None, help="When it saved its work (RFC 3339; default: now).")
@click.pass_obj
def checkpoint(obj: Ctx, name: str, namespace: str, at: str | None) -> None:
    """Declare that a running job saved its work: a reclaim then loses only the run since."""
    when = None
    if at is not None:
        try:
            when = datetime.fromisoformat(at.strip())
        except ValueError:
            fail(f"--at: {at!r} is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)")
    try:
        j = obj.client.checkpoint_job(name, namespace, at=when)
    except VGlobalError as exc:
        fail(str(exc))
    console.print(f"{printed_as(j.kind, j.namespace, j.name)} checkpointed ({j.phase})", highlight=False)
