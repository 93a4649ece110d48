"""`vglobal job suspend|resume NAME`: vcctl's job suspend and resume."""

from __future__ import annotations

from collections.abc import Callable

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
