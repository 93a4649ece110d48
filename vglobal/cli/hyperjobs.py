"""`vglobal get hyperjobs`, `describe hyperjob NAME`, `hyperjob cancel|delete NAME`: a HyperJob
seen through its child jobs (label ``volcano.sh/hyperjob-name``)."""

from __future__ import annotations

import json
from typing import Any

import click
import grpc
from rich.console import Console

from vglobal.api.v1 import jobs_pb2
from vglobal.cli.common import Ctx, console, fail
from vglobal.client import Client, VGlobalError
from vglobal.model import hyperjob
from vglobal.model.hyperjob_status import ChildState, hyperjob_phase


def _child(j: jobs_pb2.Job) -> ChildState:
    return ChildState(
        j.name,
        j.cluster,
        j.phase,
        sum(t.pending for t in j.tasks),
        sum(t.running for t in j.tasks),
        sum(t.succeeded for t in j.tasks),
        sum(t.failed for t in j.tasks),
    )


def _min_available(client: Client, first: jobs_pb2.Job, count: int) -> int:
    manifest = json.loads(client.get_job(first.name, first.namespace).manifest or "{}")
    text = (manifest.get("metadata", {}).get("annotations") or {}).get(hyperjob.MIN_AVAILABLE_ANNOTATION)
    return int(text) if text and text.isdigit() else count


def _index(j: jobs_pb2.Job) -> int:
    tail = j.name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def hyperjob_rows(client: Client, namespace: str = "", name: str = "") -> list[dict[str, Any]]:
    """One row per HyperJob: its phase, children, where they run and why the first waiting one waits."""
    labels = {hyperjob.HYPERJOB_LABEL: name} if name else None
    jobs = client.list_jobs(labels=labels, **({"namespace": namespace} if namespace else {}))
    groups: dict[tuple[str, str], list[jobs_pb2.Job]] = {}
    for j in jobs:
        hj = j.labels.get(hyperjob.HYPERJOB_LABEL)
        if hj:
            groups.setdefault((j.namespace, hj), []).append(j)
    rows = []
    for (ns, hj), kids in sorted(groups.items()):
        kids.sort(key=lambda j: (j.labels.get(hyperjob.REPLICATED_JOB_LABEL, ""), _index(j)))
        states = [_child(j) for j in kids]
        minimum = _min_available(client, kids[0], len(kids))
        waiting = next((j for j in kids if j.binding_phase == "Suspended" and j.reason), None)
        rows.append(
            {
                "name": hj,
                "namespace": ns,
                "phase": hyperjob_phase(states, minimum),
                "minAvailable": minimum,
                "children": [
                    {
                        "name": s.name,
                        "cluster": s.cluster,
                        "phase": s.phase,
                        "pending": s.pending,
                        "running": s.running,
                        "succeeded": s.succeeded,
                        "failed": s.failed,
                    }
                    for s in states
                ],
                "waiting": waiting.reason if waiting is not None else "",
            }
        )
    return rows


def print_hyperjobs(rows: list[dict[str, Any]], out: Console) -> None:
    out.print(f"{'NAME':<24} {'NAMESPACE':<12} {'PHASE':<10} {'RUNNING':<8} CLUSTERS", highlight=False)
    for r in rows:
        kids = r["children"]
        running = sum(k["phase"] == "Running" for k in kids)
        clusters = ",".join(sorted({k["cluster"] for k in kids if k["cluster"]})) or "-"
        out.print(
            f"{r['name']:<24} {r['namespace']:<12} {r['phase']:<10} {f'{running}/{len(kids)}':<8} {clusters}",
            highlight=False,
        )


def describe_hyperjob(client: Client, name: str, namespace: str, out: Console) -> None:
    rows = hyperjob_rows(client, namespace, name)
    if not rows:
        raise VGlobalError(grpc.StatusCode.NOT_FOUND, f'hyperjob "{namespace}/{name}" not found')
    r = rows[0]
    out.print(f"Name:          {r['name']}\nNamespace:     {r['namespace']}", highlight=False)
    out.print(f"Phase:         {r['phase']}\nMinAvailable:  {r['minAvailable']}", highlight=False)
    out.print("Children:", highlight=False)
    for k in r["children"]:
        out.print(
            f"  {k['name']:<28} {k['cluster'] or '-':<12} {k['phase']:<10} pods: {k['pending']} pending, "
            f"{k['running']} running, {k['succeeded']} succeeded, {k['failed']} failed",
            highlight=False,
        )
    if r["waiting"]:
        out.print(f"Waiting:       {r['waiting']}", highlight=False)


@click.group("hyperjob")
def hyperjob_group() -> None:
    """Cancel or delete a HyperJob: every child job with it."""


def _each_child(obj: Ctx, name: str, namespace: str, action: str) -> None:
    try:
        kids = obj.client.list_jobs(labels={hyperjob.HYPERJOB_LABEL: name}, namespace=namespace)
        if not kids:
            fail(f'NOT_FOUND: hyperjob "{namespace}/{name}" not found')
        for j in kids:
            (obj.client.cancel_job if action == "cancelled" else obj.client.delete_job)(j.name, j.namespace)
    except VGlobalError as exc:
        fail(str(exc))
    console.print(
        f"hyperjob.training.volcano.sh/{namespace}/{name} {action} ({len(kids)} children)", highlight=False
    )


@hyperjob_group.command("cancel")
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def cancel(obj: Ctx, name: str, namespace: str) -> None:
    """Stop every child wherever it runs."""
    _each_child(obj, name, namespace, "cancelled")


@hyperjob_group.command("delete")
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def delete(obj: Ctx, name: str, namespace: str) -> None:
    """Delete every child (a running one is stopped first, as `job delete` does)."""
    _each_child(obj, name, namespace, "deleted")
