"""Entry point of the `vglobal` command."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import grpc

from vglobal.api.v1 import queues_pb2
from vglobal.cli import output
from vglobal.cli.common import FILE, Ctx, console, err_console, fail
from vglobal.cli.documents import DocumentError, apply_order, read_documents
from vglobal.cli.global_options import GlobalOptionsGroup
from vglobal.cli.hub_cmd import hub
from vglobal.cli.workflows import KINDS as WORKFLOW_KINDS
from vglobal.cli.workflows import apply_workflow, create_group, cronjob_group
from vglobal.client import Client, VGlobalError
from vglobal.dial import Dial, DialError, read_token_file

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
    ctx.obj = Ctx(dial)


cli.add_command(hub)


# ---------------------------------------------------------------- resources


def request_id_for(kind: str, body: dict[str, Any]) -> str:
    """Re-applying the same manifest returns the same job instead of failing."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
    return f"apply-{kind.lower()}-{digest}"


@cli.command()
@click.option(
    "-f", "--filename", "path", type=click.Path(path_type=Path), required=True, help="File or directory."
)
@click.pass_obj
def apply(obj: Ctx, path: Path) -> None:
    """Create or update Jobs, Queues, PriorityClasses, CronJobs, JobTemplates and JobFlows from
    YAML/JSON manifests."""
    try:
        docs = apply_order(read_documents(path))
    except DocumentError as exc:
        fail(str(exc))
    failed = False
    for d in docs:
        if d.kind == "Job":
            continue  # after the queues and priority classes, in batches
        try:
            if d.kind == "Queue":
                q = obj.client.apply_queue(d.text)
                console.print(f"queue.scheduling.volcano.sh/{q.name} configured", highlight=False)
            elif d.kind == "PriorityClass":
                pc = obj.client.apply_priority_class(d.text)
                console.print(f"priorityclass.scheduling.k8s.io/{pc.name} configured", highlight=False)
            elif d.kind in WORKFLOW_KINDS:
                console.print(apply_workflow(obj.client, d), highlight=False)
            else:
                raise VGlobalError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f'kind: unknown kind "{d.kind}" (supported: Job, Queue, PriorityClass, '
                    f"{', '.join(WORKFLOW_KINDS)})",
                )
        except VGlobalError as exc:
            err_console.print(
                f"[red]error:[/red] {d.source} ({d.kind} {d.name}): {exc}", highlight=False, soft_wrap=True
            )
            failed = True
    if jobs := [d for d in docs if d.kind == "Job"]:
        from vglobal.cli.apply_jobs import apply_jobs

        applied = apply_jobs(obj.client, jobs, lambda d: request_id_for(d.kind, d.body), console, err_console)
        failed = failed or applied.failed > 0
    if failed:
        sys.exit(1)


# Kinds `get` lists besides jobs, queues, clusters and hypernodes: (SDK call, row, table).
LISTED: dict[str, tuple[Callable[[Client, str], list[Any]], Callable[[Any], dict[str, Any]], str]] = {
    "cronjob": (Client.list_cron_jobs, output.cronjob_row, "cronjobs"),
    "jobflow": (Client.list_job_flows, output.jobflow_row, "jobflows"),
    "jobtemplate": (Client.list_job_templates, output.jobtemplate_row, "jobtemplates"),
}
GET_KINDS = ["jobs", "job", "queues", "queue", "clusters", "cluster", "hypernodes", "hypernode"]
GET_KINDS += [k for name in LISTED for k in (name + "s", name)] + ["cj"]


@cli.command()
@click.argument("kind", type=click.Choice(GET_KINDS))
@click.option("-o", "--output", "fmt", type=FORMATS, default="table", show_default=True)
@click.option("-n", "--namespace", default="", help="Only objects of this namespace.")
@click.option("-q", "--queue", default="", help="Only jobs of this queue.")
@click.option("-l", "--selector", default="", help="Only jobs with these labels: key=value,...")
@click.option("-w", "--watch", is_flag=True, help="Jobs: after the list, print every change as it happens.")
@click.option("--cluster", default="", help="The cluster whose HyperNodes to show.")
@click.pass_obj
def get(
    obj: Ctx, kind: str, fmt: str, namespace: str, queue: str, selector: str, watch: bool, cluster: str
) -> None:
    """List jobs, queues, clusters, cronjobs, jobflows, jobtemplates, or one cluster's HyperNode tree."""
    from vglobal.cli.watching import parse_selector, watch_jobs

    try:
        labels = parse_selector(selector)
    except ValueError as exc:
        fail(str(exc))
    if watch and not kind.startswith("job"):
        fail("--watch: only jobs can be watched")
    kind = "cronjob" if kind == "cj" else kind
    try:
        if kind.rstrip("s") in LISTED:
            call, row, table_kind = LISTED[kind.rstrip("s")]
            output.emit(table_kind, [row(x) for x in call(obj.client, namespace)], fmt, console)
        elif watch:
            watch_jobs(obj.client, fmt=fmt, namespace=namespace, queue=queue, labels=labels)
        elif kind.startswith("hypernode"):
            if not cluster:
                fail("get hypernodes needs --cluster NAME")
            from vglobal.cli.hypernodes import print_hypernode_tree

            msg = obj.client.get_cluster(cluster)
            if fmt in ("json", "yaml"):
                output.emit("hypernodes", [output.hypernode_row(h) for h in msg.hypernodes], fmt, console)
            else:
                print_hypernode_tree(msg, console)
        elif kind.startswith("job"):
            pages = obj.client.job_pages(JOB_PAGE, namespace=namespace, queue=queue, labels=labels)
            output.emit_pages("jobs", ([output.job_row(j) for j in page] for page in pages), fmt, console)
        elif kind.startswith("queue"):
            output.emit("queues", [output.queue_row(q) for q in obj.client.list_queues()], fmt, console)
        else:
            output.emit("clusters", [output.cluster_row(c) for c in obj.client.list_clusters()], fmt, console)
    except VGlobalError as exc:
        fail(str(exc))


@cli.command()
@click.argument("kind", type=click.Choice(["job", "queue", "cronjob", "cj", "jobflow"]))
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("-w", "--watch", is_flag=True, help="Job: then follow its changes and events.")
@click.pass_obj
def describe(obj: Ctx, kind: str, name: str, namespace: str, watch: bool) -> None:
    """Show a job (binding, cluster, why it waits, events), a queue (its shares and decayed usage), a
    cronjob (its runs) or a jobflow (its DAG)."""
    from vglobal.cli.describe import describe_job, describe_queue
    from vglobal.cli.describe_workflows import describe_cronjob, describe_jobflow
    from vglobal.cli.watching import follow_job

    if watch and kind != "job":
        fail("--watch: only a job can be followed")
    try:
        if kind == "queue":
            describe_queue(obj.client, name, console)
        elif kind in ("cronjob", "cj"):
            describe_cronjob(obj.client, name, namespace, console)
        elif kind == "jobflow":
            describe_jobflow(obj.client, name, namespace, console)
        elif watch:
            follow_job(obj.client, name, namespace, console)
        else:
            describe_job(obj.client, name, namespace, console)
    except VGlobalError as exc:
        fail(str(exc))


@cli.command()
@click.argument("kind", type=click.Choice(["job", "queue", "cronjob", "cj", "jobflow", "jobtemplate"]))
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--cascade", is_flag=True, help="CronJob: delete its Jobs too (stopping those that run).")
@click.option("--force", is_flag=True, help="Queue: also delete the records of its finished jobs.")
@click.pass_obj
def delete(obj: Ctx, kind: str, name: str, namespace: str, cascade: bool, force: bool) -> None:
    """Delete a job (stopping it where it runs), a queue without unfinished jobs, a cronjob (its
    jobs stay unless --cascade), a jobflow (and its jobs) or a jobtemplate."""
    if cascade and kind not in ("cronjob", "cj"):
        fail("--cascade: only for a cronjob (a jobflow's jobs always go with it)")
    try:
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
            obj.client.delete_job(name, namespace)
            console.print(f"job.batch.volcano.sh/{namespace}/{name} deleted", highlight=False)
        else:
            resp = obj.client.delete_queue(name, force=force)
            records = f" with the records of {resp.deleted_jobs} finished jobs" if resp.deleted_jobs else ""
            console.print(f"queue.scheduling.volcano.sh/{name} deleted{records}", highlight=False)
    except VGlobalError as exc:
        fail(str(exc))


@cli.command()
@click.argument("kind", type=click.Choice(["job"]))
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def cancel(obj: Ctx, kind: str, name: str, namespace: str) -> None:
    """Stop a job wherever it runs; it stays listed as Aborted."""
    try:
        j = obj.client.cancel_job(name, namespace)
        console.print(f"job.batch.volcano.sh/{j.namespace}/{j.name} cancelled", highlight=False)
    except VGlobalError as exc:
        fail(str(exc))


@cli.group("queue")
def queue_group() -> None:
    """Open or close a queue."""


@cli.group("cluster")
def cluster_group() -> None:
    """Cordon, uncordon or drain a member cluster."""


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


def register_extras() -> None:
    from vglobal.cli.agent import agent
    from vglobal.cli.certs import certs
    from vglobal.cli.demo import demo
    from vglobal.cli.health import health
    from vglobal.cli.sim import sim

    cli.add_command(agent)
    cli.add_command(certs)
    cli.add_command(cronjob_group)
    cli.add_command(create_group)
    cli.add_command(demo)
    cli.add_command(health)
    cli.add_command(sim)


def main() -> None:
    register_extras()
    cli()
