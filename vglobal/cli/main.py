"""Entry point of the `vglobal` command."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from vglobal.api.v1 import queues_pb2
from vglobal.cli.apply_cmd import apply
from vglobal.cli.clusters import delete_cluster
from vglobal.cli.common import FILE, Ctx, console, define_kinds, fail
from vglobal.cli.diff_cmd import diff
from vglobal.cli.get_cmd import get
from vglobal.cli.global_options import GlobalOptionsGroup
from vglobal.cli.hub_cmd import hub
from vglobal.cli.hyperjobs import hyperjob_group
from vglobal.cli.job_cmd import checkpoint, job_group
from vglobal.cli.logs_cmd import logs
from vglobal.cli.objects_cmd import KINDS as OBJECT_KINDS
from vglobal.cli.scale_cmd import scale
from vglobal.cli.workflows import create_group, cronjob_group
from vglobal.dial import Dial, DialError, read_token_file
from vglobal.model.kinds import printed_as
from vglobal.sdk import Client, VGlobalError

__all__ = ["Ctx", "cli", "fail", "main", "register_extras"]

FORMATS = click.Choice(["table", "wide", "json", "yaml"])
# Jobs fetched per ListJobs call by `get jobs`: each page is printed before the next is fetched.
JOB_PAGE = 2000
T = TypeVar("T")


@click.group(cls=GlobalOptionsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--hub", default=None, help="Hub address HOST:PORT (env VGLOBAL_HUB, default 127.0.0.1:50051).")
@click.option(
    "--ca-file",
    type=FILE,
    default=None,
    help="Reach the hub over TLS, trusting this CA (env VGLOBAL_CA_FILE).",
)
@click.option(
    "--cert", type=FILE, default=None, help="Client certificate, e.g. an agent's (env VGLOBAL_CERT)."
)
@click.option("--key", type=FILE, default=None, help="The client certificate's key (env VGLOBAL_KEY).")
@click.option("--token", default=None, help="Bearer token (env VGLOBAL_TOKEN; prefer --token-file).")
@click.option(
    "--token-file",
    type=FILE,
    default=None,
    help="Read the bearer token from this file (env VGLOBAL_TOKEN_FILE).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    hub: str | None,
    ca_file: Path | None,
    cert: Path | None,
    key: Path | None,
    token: str | None,
    token_file: Path | None,
) -> None:
    """vglobal: submit Volcano Jobs to many clusters through one hub."""
    try:
        if token_file is not None:
            token = read_token_file(token_file)
        dial = Dial.from_env(hub, ca_file=ca_file, cert=cert, key=key, token=token)
    except DialError as exc:
        fail(str(exc))
    kinds_file = os.environ.get("VGLOBAL_KINDS_FILE")  # the hub's kinds, for apply, describe, sim
    if kinds_file and ctx.invoked_subcommand not in ("hub", "agent"):  # those read it as a setting
        define_kinds(Path(kinds_file))
    ctx.obj = Ctx(dial)


cli.add_command(hub)


# ---------------------------------------------------------------- resources


cli.add_command(apply)
cli.add_command(scale)
cli.add_command(diff)
cli.add_command(get)
cli.add_command(job_group)
cli.add_command(checkpoint)
cli.add_command(logs)
cli.add_command(hyperjob_group)


@cli.command()
@click.argument(
    "kind",
    type=click.Choice(["job", "queue", "cronjob", "cj", "jobflow", "hyperjob", "cluster", *OBJECT_KINDS]),
)
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("-w", "--watch", is_flag=True, help="Job, hyperjob: then follow its changes and events.")
@click.pass_obj
def describe(obj: Ctx, kind: str, name: str, namespace: str, watch: bool) -> None:
    """Show a job (binding, cluster, why it waits, events), a queue (its shares and decayed usage), a
    cronjob (its runs), a jobflow (its DAG), a hyperjob (its children, why they wait, events) or a
    cluster (its nodes, capacity, labels, taints, heartbeats and the jobs on each node), a configmap
    or a secret (its keys and sizes, a ConfigMap's text, the unfinished jobs using it)."""
    from vglobal.cli.describe import describe_job, describe_queue
    from vglobal.cli.describe_workflows import describe_cronjob, describe_jobflow
    from vglobal.cli.watching import follow_job

    if watch and kind not in ("job", "hyperjob"):
        fail("--watch: only a job or a hyperjob can be followed")
    try:
        if kind in OBJECT_KINDS:
            from vglobal.cli.objects_cmd import describe_object

            describe_object(obj.client, kind, name, namespace, console)
        elif kind == "queue":
            describe_queue(obj.client, name, console)
        elif kind == "cluster":
            from vglobal.cli.clusters import describe_cluster

            describe_cluster(obj.client, name, console)
        elif kind in ("cronjob", "cj"):
            describe_cronjob(obj.client, name, namespace, console)
        elif kind == "jobflow":
            describe_jobflow(obj.client, name, namespace, console)
        elif kind == "hyperjob" and watch:
            from vglobal.cli.hyperjob_watch import follow_hyperjob

            follow_hyperjob(obj.client, name, namespace, console)
        elif kind == "hyperjob":
            from vglobal.cli.hyperjobs import describe_hyperjob

            describe_hyperjob(obj.client, name, namespace, console)
        elif watch:
            follow_job(obj.client, name, namespace, console)
        else:
            describe_job(obj.client, name, namespace, console)
    except VGlobalError as exc:
        fail(str(exc))


@cli.command()
@click.argument(
    "kind",
    type=click.Choice(
        [
            "job",
            "queue",
            "cronjob",
            "cj",
            "jobflow",
            "jobtemplate",
            "priorityclass",
            "pc",
            "hyperjob",
            *OBJECT_KINDS,
            "namespace",
            "ns",
        ]
    ),
)
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--cascade", is_flag=True, help="CronJob: delete its Jobs too (stopping those that run).")
@click.option(
    "--force",
    is_flag=True,
    help="Queue: also delete the records of its finished jobs. ConfigMap, Secret: even while a running "
    "job uses it.",
)
@click.pass_obj
def delete(obj: Ctx, kind: str, name: str, namespace: str, cascade: bool, force: bool) -> None:
    """Delete a job (stopping it where it runs), a queue without unfinished jobs, a cronjob (its
    jobs stay unless --cascade), a jobflow (and its jobs), a hyperjob (every child), a jobtemplate
    a priorityclass or a namespace (refused while jobs of it are unfinished)."""
    if cascade and kind not in ("cronjob", "cj"):
        fail("--cascade: only for a cronjob (a jobflow's jobs always go with it)")
    if kind == "hyperjob":
        from vglobal.cli.hyperjobs import delete_hyperjob

        delete_hyperjob(obj, name, namespace)
        return
    try:
        if kind in OBJECT_KINDS:
            obj.client.delete_object(OBJECT_KINDS[kind], name, namespace, force=force)
            console.print(f"{OBJECT_KINDS[kind].lower()}/{namespace}/{name} deleted", highlight=False)
            return
        if kind in ("priorityclass", "pc"):
            obj.client.delete_priority_class(name)
            console.print(f"priorityclass.scheduling.k8s.io/{name} deleted", highlight=False)
            return
        if kind in ("namespace", "ns"):
            obj.client.delete_namespace(name)  # refused while jobs of it are unfinished
            console.print(f"namespace/{name} deleted", highlight=False)
            return
        if kind in ("cronjob", "cj"):
            gone = obj.client.delete_cron_job(name, namespace, cascade=cascade).deleted_jobs
            console.print(f"cronjob.batch.volcano.sh/{namespace}/{name} deleted", highlight=False)
        elif kind == "jobflow":
            gone = obj.client.delete_job_flow(name, namespace).deleted_jobs
            console.print(f"jobflow.flow.volcano.sh/{namespace}/{name} deleted", highlight=False)
        elif kind == "jobtemplate":
            obj.client.delete_job_template(name, namespace)
            console.print(f"jobtemplate.flow.volcano.sh/{namespace}/{name} deleted", highlight=False)
            return
        if kind in ("cronjob", "cj", "jobflow"):
            for job in gone:
                console.print(f"job.batch.volcano.sh/{namespace}/{job} deleted", highlight=False)
        elif kind == "job":
            shown = obj.client.get_job(name, namespace).kind  # the kind the message names
            obj.client.delete_job(name, namespace)
            console.print(f"{printed_as(shown, namespace, name)} deleted", highlight=False)
        else:
            resp = obj.client.delete_queue(name, force=force)
            records = f" with the records of {resp.deleted_jobs} finished jobs" if resp.deleted_jobs else ""
            console.print(f"queue.scheduling.volcano.sh/{name} deleted{records}", highlight=False)
    except VGlobalError as exc:
        fail(str(exc))


@cli.command()
@click.argument("kind", type=click.Choice(["job", "hyperjob"]))
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def cancel(obj: Ctx, kind: str, name: str, namespace: str) -> None:
    """Stop a job (or a hyperjob: every child) wherever it runs; it stays listed as Aborted."""
    if kind == "hyperjob":
        from vglobal.cli.hyperjobs import cancel_hyperjob

        cancel_hyperjob(obj, name, namespace)
        return
    try:
        j = obj.client.cancel_job(name, namespace)
        console.print(f"{printed_as(j.kind, j.namespace, j.name)} cancelled", highlight=False)
    except VGlobalError as exc:
        fail(str(exc))


@cli.group("queue")
def queue_group() -> None:
    """Open or close a queue."""


@cli.group("cluster")
def cluster_group() -> None:
    """Cordon, uncordon, drain or delete a member cluster."""


def name_command(
    group: click.Group, action: str, doc: str, call: Callable[[Client, str], T], said: Callable[[T], str]
) -> None:
    """Add ``vglobal GROUP ACTION NAME``: one SDK call on the named object, one line printed."""

    @group.command(action, help=doc)
    @click.argument("name")
    @click.pass_obj
    def command(obj: Ctx, name: str) -> None:
        try:
            console.print(said(call(obj.client, name)), highlight=False)
        except VGlobalError as exc:
            fail(str(exc))


def _queue_state(q: queues_pb2.Queue) -> str:
    return f"queue {q.name} is {q.state}"


name_command(queue_group, "open", "Open a queue.", Client.open_queue, _queue_state)
name_command(queue_group, "close", "Close a queue: no new jobs.", Client.close_queue, _queue_state)
name_command(
    cluster_group,
    "cordon",
    "Cordon a cluster: no new jobs go there.",
    Client.cordon_cluster,
    lambda c: f"cluster {c.name} cordoned: {c.state}",
)
name_command(
    cluster_group,
    "uncordon",
    "Uncordon a cluster.",
    Client.uncordon_cluster,
    lambda c: f"cluster {c.name} uncordoned: {c.state}",
)
name_command(
    cluster_group,
    "drain",
    "Drain a cluster: its jobs go back to wait for another cluster.",
    Client.drain_cluster,
    lambda c: f"cluster {c.name} drained: {c.state}",
)


cluster_group.add_command(delete_cluster)


def register_extras() -> None:
    from vglobal.cli.agent import agent
    from vglobal.cli.certs import certs
    from vglobal.cli.dashboard import dashboard
    from vglobal.cli.demo import demo
    from vglobal.cli.health import health
    from vglobal.cli.objects_cmd import secret_key
    from vglobal.cli.sim import sim

    cli.add_command(agent)
    cli.add_command(certs)
    cli.add_command(cronjob_group)
    cli.add_command(create_group)
    cli.add_command(dashboard)
    cli.add_command(demo)
    cli.add_command(health)
    cli.add_command(secret_key)
    cli.add_command(sim)


def main() -> None:
    register_extras()
    cli()
