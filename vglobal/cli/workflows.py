"""CLI commands of CronJobs, JobTemplates and JobFlows: applying them, `vglobal cronjob suspend|resume`,
`vglobal create job NAME --from cronjob/CRON`."""

from __future__ import annotations

from typing import Protocol

import click

from vglobal.cli.common import console, fail
from vglobal.cli.documents import Document
from vglobal.sdk import Client, VGlobalError

KINDS = ("CronJob", "JobTemplate", "JobFlow")


class WithClient(Protocol):
    """What the CLI's context object gives these commands (cli.common.Ctx)."""

    @property
    def client(self) -> Client: ...


def apply_workflow(client: Client, d: Document, *, field_validation: str = "") -> str:
    """Apply one CronJob, JobTemplate or JobFlow; the line to print."""
    if d.kind == "CronJob":
        c = client.apply_cron_job(d.text, field_validation=field_validation)
        return f"cronjob.batch.volcano.sh/{c.cron_job.namespace}/{c.cron_job.name} {c.result}"
    if d.kind == "JobTemplate":
        t = client.apply_job_template(d.text, field_validation=field_validation)
        return f"jobtemplate.flow.volcano.sh/{t.job_template.namespace}/{t.job_template.name} {t.result}"
    f = client.apply_job_flow(d.text, field_validation=field_validation)
    return f"jobflow.flow.volcano.sh/{f.job_flow.namespace}/{f.job_flow.name} {f.result}"


@click.group("cronjob")
def cronjob_group() -> None:
    """Suspend or resume a CronJob."""


def _cron_command(action: str, doc: str, suspend: bool) -> None:
    @cronjob_group.command(action, help=doc)
    @click.argument("name")
    @click.option("-n", "--namespace", default="default", show_default=True)
    @click.pass_obj
    def command(obj: WithClient, name: str, namespace: str) -> None:
        try:
            call = obj.client.suspend_cron_job if suspend else obj.client.resume_cron_job
            c = call(name, namespace)
        except VGlobalError as exc:
            fail(str(exc))
        done = action.removesuffix("e") + "ed"
        console.print(f"cronjob.batch.volcano.sh/{c.namespace}/{c.name} {done}", highlight=False)


_cron_command("suspend", "Suspend a CronJob: it makes no runs until resumed.", True)
_cron_command(
    "resume",
    "Resume a CronJob: it makes at most the latest run it missed, then follows its schedule.",
    False,
)


@click.group("create")
def create_group() -> None:
    """Create an object from another (a Job from a CronJob's template)."""


@create_group.command("job")
@click.argument("name")
@click.option("--from", "source", required=True, help="cronjob/NAME: the CronJob whose jobTemplate to use.")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def create_job(obj: WithClient, name: str, source: str, namespace: str) -> None:
    """Create the Job NAME now from a CronJob's template (as kubectl create job --from=cronjob/CRON)."""
    kind, _, cron = source.partition("/")
    if kind.lower() not in ("cronjob", "cronjobs", "cj") or not cron:
        fail(f'--from: expected cronjob/NAME, got "{source}"')
    try:
        j = obj.client.create_job_from_cron_job(name, cron, namespace)
    except VGlobalError as exc:
        fail(str(exc))
    console.print(f"job.batch.volcano.sh/{j.namespace}/{j.name} created", highlight=False)
