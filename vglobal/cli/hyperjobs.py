"""`vglobal get hyperjobs`, `describe hyperjob NAME`, `cancel|delete hyperjob NAME` (and `hyperjob
cancel|delete NAME`), over the hub's HyperJobService (a HyperJob's status is read from its child
jobs there)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
import grpc
from rich.console import Console

from vglobal.api.v1 import common_pb2, hyperjobs_pb2
from vglobal.cli.common import Ctx, console, fail
from vglobal.cli.documents import Document
from vglobal.sdk import Client, VGlobalError


def _row(h: hyperjobs_pb2.HyperJob) -> dict[str, Any]:
    return {
        "name": h.name,
        "namespace": h.namespace,
        "queue": h.queue,
        "phase": h.phase,
        "minAvailable": h.min_available,
        "failurePolicy": h.failure_policy,
        "runningChildren": h.running_children,
        "children": [
            {
                "name": k.name,
                "replicatedJob": k.replicated_job,
                "index": k.index,
                "cluster": k.cluster,
                "phase": k.phase,
                "bindingPhase": k.binding_phase,
                "generation": k.generation,
                "pending": k.pending,
                "running": k.running,
                "succeeded": k.succeeded,
                "failed": k.failed,
                "reason": k.reason,
            }
            for k in h.children
        ],
        "waiting": h.waiting_reason,
    }


def hyperjob_rows(client: Client, namespace: str = "", name: str = "") -> list[dict[str, Any]]:
    """One row per HyperJob (only ``name`` when given: none when there is no such HyperJob)."""
    if not name:
        return [_row(h) for h in client.list_hyperjobs(namespace)]
    try:
        return [_row(client.get_hyperjob(name, namespace or "default"))]
    except VGlobalError as exc:
        if exc.code == grpc.StatusCode.NOT_FOUND:
            return []
        raise


def print_hyperjobs(rows: list[dict[str, Any]], out: Console) -> None:
    head = (
        f"{'NAME':<24} {'NAMESPACE':<12} {'QUEUE':<12} {'PHASE':<10} {'RUNNING':<8} {'MIN':<4} {'PODS':<6} "
        "CLUSTERS"
    )
    out.print(head, highlight=False)
    for r in rows:
        kids = r["children"]
        running = f"{r['runningChildren']}/{len(kids)}"
        pods = sum(k["running"] for k in kids)
        clusters = ",".join(sorted({k["cluster"] for k in kids if k["cluster"]})) or "-"
        out.print(
            f"{r['name']:<24} {r['namespace']:<12} {r['queue']:<12} {r['phase']:<10} {running:<8} "
            f"{r['minAvailable']:<4} {pods:<6} {clusters}",
            highlight=False,
        )


def child_events(client: Client, names: Sequence[str], namespace: str) -> list[tuple[str, common_pb2.Event]]:
    """Every event of the children, each with its child, in time order."""
    got = [(n, e) for n in names for e in client.explain_job(n, namespace).events]
    return sorted(got, key=lambda ne: (ne[1].time.ToDatetime(), ne[1].id))


def event_line(child: str, e: common_pb2.Event) -> str:
    return f"  {e.time.ToDatetime():%H:%M:%S}  {child:<28} {e.kind:<7} {e.reason:<14} {e.message}"


def describe_hyperjob(client: Client, name: str, namespace: str, out: Console) -> None:
    """The HyperJob: its phase, each child (cluster, phase, generation, pods, why it waits) and the
    children's events in time order."""
    r = _row(client.get_hyperjob(name, namespace))
    out.print(
        f"Name:          {r['name']}\nNamespace:     {r['namespace']}\nQueue:         {r['queue']}",
        highlight=False,
    )
    out.print(f"Phase:         {r['phase']}\nMinAvailable:  {r['minAvailable']}", highlight=False)
    out.print(f"FailurePolicy: {r['failurePolicy']}", highlight=False)
    out.print("Children:", highlight=False)
    for k in r["children"]:
        out.print(
            f"  {k['name']:<28} {k['cluster'] or '-':<12} {k['phase']:<10} gen {k['generation']:<3} "
            f"pods: {k['pending']} pending, {k['running']} running, {k['succeeded']} succeeded, "
            f"{k['failed']} failed",
            highlight=False,
        )
        # why this child waits, or (admitted, not placed yet) for which victims' eviction
        if k["reason"] and k["bindingPhase"] in ("Suspended", "Dispatched", "Bound"):
            out.print(f"    {k['reason']}", highlight=False, soft_wrap=True)
    if r["waiting"]:
        out.print(f"Waiting:       {r['waiting']}", highlight=False, soft_wrap=True)
    out.print("Events:", highlight=False)
    events = child_events(client, [k["name"] for k in r["children"]], namespace)
    if not events:
        out.print("  <none>", highlight=False)
    for child, e in events:
        out.print(event_line(child, e), highlight=False, soft_wrap=True)


@click.group("hyperjob")
def hyperjob_group() -> None:
    """Cancel or delete a HyperJob: every child job with it, in one transaction."""


def cancel_hyperjob(obj: Ctx, name: str, namespace: str) -> None:
    """Stop every child wherever it runs (`cancel hyperjob` and `hyperjob cancel`)."""
    try:
        h = obj.client.cancel_hyperjob(name, namespace)
    except VGlobalError as exc:
        fail(str(exc))
    console.print(
        f"hyperjob.training.volcano.sh/{namespace}/{name} cancelled ({len(h.children)} children)",
        highlight=False,
    )


def delete_hyperjob(obj: Ctx, name: str, namespace: str) -> None:
    """Delete every child (`delete hyperjob` and `hyperjob delete`)."""
    try:
        got = obj.client.delete_hyperjob(name, namespace)
    except VGlobalError as exc:
        fail(str(exc))
    console.print(
        f"hyperjob.training.volcano.sh/{namespace}/{name} deleted ({len(got.uids)} children)", highlight=False
    )


def unknown_cluster_warnings(client: Client, docs: Sequence[Document]) -> list[str]:
    """For `apply --validate=warn`: each HyperJob's clusterNames that name no cluster the hub knows
    (the hub takes them under Warn; under Strict it refuses them). Nothing when the caller may not
    list clusters: the hub's word is then the only one."""
    pinned = []
    for d in docs:
        spec = d.body.get("spec") if d.kind == "HyperJob" else None
        rjs = spec.get("replicatedJobs") if isinstance(spec, dict) else None
        for i, rj in enumerate(rjs if isinstance(rjs, list) else []):
            names = rj.get("clusterNames") if isinstance(rj, dict) else None
            for k, c in enumerate(names if isinstance(names, list) else []):
                pinned.append((d, f"spec.replicatedJobs[{i}].clusterNames[{k}]", str(c)))
    if not pinned:
        return []
    try:
        known = {c.name for c in client.list_clusters()}
    except VGlobalError:
        return []
    there = ", ".join(sorted(known)) or "none registered yet"
    return [
        f'Warning: {d.source} (HyperJob {d.name}): {field}: cluster "{c}" does not exist (clusters: {there})'
        for d, field, c in pinned
        if c not in known
    ]


@hyperjob_group.command("cancel")
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def cancel(obj: Ctx, name: str, namespace: str) -> None:
    """Stop every child wherever it runs."""
    cancel_hyperjob(obj, name, namespace)


@hyperjob_group.command("delete")
@click.argument("name")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.pass_obj
def delete(obj: Ctx, name: str, namespace: str) -> None:
    """Delete every child (a running one is stopped first, as `job delete` does)."""
    delete_hyperjob(obj, name, namespace)
