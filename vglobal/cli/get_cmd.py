"""`vglobal get`: list objects, or the ones named, as kubectl does (``-A``, ``-o name``, ``-w``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from vglobal.cli import objects_cmd, output
from vglobal.cli.common import Ctx, console, err_console, fail
from vglobal.sdk import Client, VGlobalError
from vglobal.sdk import rows as display

FORMATS = click.Choice(["table", "wide", "json", "yaml", "name"])
# Jobs fetched per ListJobs call by `get jobs`: each page is printed before the next is fetched.
JOB_PAGE = 2000

Lister = Callable[[Client, str], list[Any]]
# Kinds listed by one call (namespace "" for all): (SDK call, row, table). Jobs and hypernodes
# have their own ways.
LISTED: dict[str, tuple[Lister, Callable[[Any], dict[str, Any]], str]] = {
    "cronjob": (Client.list_cron_jobs, display.cronjob_row, "cronjobs"),
    "jobflow": (Client.list_job_flows, display.jobflow_row, "jobflows"),
    "jobtemplate": (Client.list_job_templates, display.jobtemplate_row, "jobtemplates"),
    "queue": (lambda c, _ns: c.list_queues(), display.queue_row, "queues"),
    "cluster": (lambda c, _ns: c.list_clusters(), display.cluster_row, "clusters"),
    "namespace": (lambda c, _ns: c.list_namespaces(), display.namespace_row, "namespaces"),
    "priorityclass": (
        lambda c, _ns: c.list_priority_classes(),
        display.priority_class_row,
        "priorityclasses",
    ),
    "configmap": (objects_cmd.lister("ConfigMap"), objects_cmd.object_row, "configmaps"),
    "secret": (objects_cmd.lister("Secret"), objects_cmd.object_row, "secrets"),
}
SHORT = {
    "cj": "cronjob",
    "pc": "priorityclass",
    "priorityclasses": "priorityclass",
    "cm": "configmap",
    "ns": "namespace",
}
WATCHED_BY_POLL = ("queue", "cluster")
GET_KINDS = ["jobs", "job", "pods", "pod", "po", "hypernodes", "hypernode", "hyperjobs", "hyperjob"]
GET_KINDS += ["nodes", "node", *SHORT]
GET_KINDS += [k for name in LISTED for k in (name + "s", name) if k not in SHORT]


def _named(table: str, rows: list[dict[str, Any]], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows of ``names`` in the order given; each missing one is reported (exit status 1 after)."""
    by_name = {r["name"]: r for r in rows}
    missing = [n for n in names if n not in by_name]
    for n in missing:
        err_console.print(f'[red]error:[/red] NOT_FOUND: {table} "{n}" not found', highlight=False)
    return [by_name[n] for n in names if n in by_name]


def _jobs_named(client: Client, names: tuple[str, ...], namespace: str) -> tuple[list[dict[str, Any]], bool]:
    rows, missing = [], False
    for n in names:
        try:
            rows.append(display.job_row(client.get_job(n, namespace)))
        except VGlobalError as exc:
            err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
            missing = True
    return rows, missing


@click.command()
@click.argument("kind", type=click.Choice(GET_KINDS))
@click.argument("names", nargs=-1)
@click.option("-o", "--output", "fmt", type=FORMATS, default="table", show_default=True)
@click.option("-n", "--namespace", default="", help="Only objects of this namespace (named jobs: default).")
@click.option(
    "-A", "--all-namespaces", is_flag=True, help="Objects of every namespace (what a list shows anyway)."
)
@click.option("-q", "--queue", default="", help="Only jobs of this queue.")
@click.option("-l", "--selector", default="", help="Only jobs with these labels: key=value,...")
@click.option(
    "-w",
    "--watch",
    is_flag=True,
    help="Jobs, HyperJobs, queues, clusters: after the list, print each change.",
)
@click.option("--cluster", default="", help="The cluster whose HyperNodes, nodes or pods to show.")
@click.option("--job", default="", help="Pods: only those of this job (in -n's namespace, default default).")
@click.pass_obj
def get(
    obj: Ctx,
    kind: str,
    names: tuple[str, ...],
    fmt: str,
    namespace: str,
    all_namespaces: bool,
    queue: str,
    selector: str,
    watch: bool,
    cluster: str,
    job: str,
) -> None:
    """List jobs, pods (of --job, or of every job that runs, or --cluster's: as their clusters name
    them, with node, IP, restarts and why one does not run), queues, clusters, nodes (of every
    cluster, or --cluster's), priorityclasses, namespaces, configmaps and secrets (keys and sizes only),
    cronjobs, jobflows, jobtemplates (or the ones NAMES names), or one cluster's HyperNode tree."""
    from vglobal.cli.watching import parse_selector, watch_jobs

    try:
        labels = parse_selector(selector)
    except ValueError as exc:
        fail(str(exc))
    if all_namespaces and namespace:
        fail("-A/--all-namespaces and -n/--namespace: give one")
    base = SHORT.get(kind, "pod" if kind == "po" else kind)
    base = base if base in LISTED else base.removesuffix("s")
    if watch and base != "hyperjob" and (names or not (base == "job" or base in WATCHED_BY_POLL)):
        fail("--watch: only lists of jobs, hyperjobs, queues and clusters can be watched")
    missing = False
    try:
        if base in LISTED:
            call, row, table = LISTED[base]
            if watch:
                from vglobal.cli.watch_lists import watch_rows

                watch_rows(table, lambda: [row(x) for x in call(obj.client, "")], fmt=fmt)
                return
            rows = [row(x) for x in call(obj.client, namespace)]
            if names:
                rows = _named(table, rows, names)
                missing = len(rows) < len(names)
            output.emit(table, rows, fmt, console)
        elif watch and base == "hyperjob":
            from vglobal.cli.hyperjob_watch import watch_hyperjobs

            watch_hyperjobs(obj.client, fmt=fmt, namespace=namespace, names=names)
        elif watch:
            watch_jobs(obj.client, fmt=fmt, namespace=namespace, queue=queue, labels=labels)
        elif base == "hyperjob":
            from vglobal.cli.hyperjobs import hyperjob_rows, print_hyperjobs

            rows = (
                [r for n in names for r in hyperjob_rows(obj.client, namespace or "default", n)]
                if names
                else hyperjob_rows(obj.client, namespace)
            )
            if fmt in ("json", "yaml"):
                output.emit("hyperjobs", rows, fmt, console)
            else:
                print_hyperjobs(rows, console)
        elif base == "pod":
            from vglobal.cli.pods_cmd import list_pods

            rows = list_pods(obj.client, job=job, namespace=namespace, cluster=cluster)
            if names:
                rows = _named("pod", rows, names)
                missing = len(rows) < len(names)
            output.emit("pods", rows, fmt, console)
        elif base == "node":
            from vglobal.cli.clusters import node_rows

            rows = node_rows(obj.client, cluster)
            if names:
                rows = _named("node", rows, names)
                missing = len(rows) < len(names)
            output.emit("nodes", rows, fmt, console)
        elif base == "hypernode":
            if not cluster:
                fail("get hypernodes needs --cluster NAME")
            from vglobal.cli.hypernodes import print_hypernode_tree

            msg = obj.client.get_cluster(cluster)
            if fmt in ("json", "yaml", "name"):
                output.emit("hypernodes", [display.hypernode_row(h) for h in msg.hypernodes], fmt, console)
            else:
                print_hypernode_tree(msg, console)
        elif names:
            rows, missing = _jobs_named(obj.client, names, namespace or "default")
            output.emit("jobs", rows, fmt, console)
        else:
            pages = obj.client.job_pages(JOB_PAGE, namespace=namespace, queue=queue, labels=labels)
            output.emit_pages("jobs", ([display.job_row(j) for j in page] for page in pages), fmt, console)
    except VGlobalError as exc:
        fail(str(exc))
    if missing:
        sys.exit(1)
