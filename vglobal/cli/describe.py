"""`vglobal describe job`: everything a person needs to know about one job; `describe queue` too."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping

from rich.console import Console

from vglobal.api.v1 import common_pb2, jobs_pb2
from vglobal.cli.describe_gang import gang_lines
from vglobal.model import queue_policy
from vglobal.model.forms import FINISHED_POD_PHASES
from vglobal.sdk import Client
from vglobal.sdk.rows import queue_row, short, starts_in


def _principal_of(events: Iterable[common_pb2.Event], reason: str) -> str:
    return next((e.principal for e in events if e.reason == reason and e.principal), "-")


def _pods_heading(job: jobs_pb2.Job) -> str:
    """Whose word the pods are: what the cluster last reported, which after a cancel may still
    show pods its agent has not confirmed stopped."""
    said = f"Pods (as cluster {job.cluster or '-'} last reported"
    if job.binding_phase == "Aborted" and any(p.phase not in FINISHED_POD_PHASES for p in job.placements):
        return said + "; cancelled, not confirmed stopped yet):"
    return said + "):"


def describe_queue(client: Client, name: str, console: Console) -> None:
    q = client.get_queue(name)
    row = queue_row(q)
    width = max(len(k) for k in row) + 1
    for k, v in row.items():
        shown = short(v) if isinstance(v, dict) else str(v)
        console.print(f"{k + ':':<{width}} {shown or '-'}", highlight=False, soft_wrap=True)
    if placement := _placement_lines(client, name):
        console.print("placement for its jobs:", highlight=False)
        for line in placement:
            console.print(line, highlight=False, soft_wrap=True)
    if q.HasField("affinity"):
        console.print("affinity:", highlight=False)
        for title, terms in (
            ("nodeGroupAffinity", q.affinity.node_group_affinity),
            ("nodeGroupAntiAffinity", q.affinity.node_group_anti_affinity),
        ):
            for kind, names in (("required", terms.required), ("preferred", terms.preferred)):
                if names:
                    console.print(f"  {title} {kind}: {', '.join(names)}", highlight=False, soft_wrap=True)


def _placement_lines(client: Client, name: str) -> list[str]:
    """The placement the queue gives its jobs, each setting with the queue it is inherited from."""
    by_name = {q.name: q for q in client.list_queues()}
    chain: list[tuple[str, Mapping[str, str]]] = []
    cur = name
    while cur in by_name and cur not in {n for n, _ in chain}:
        meta = json.loads(by_name[cur].manifest or "{}").get("metadata") or {}
        chain.append((cur, meta.get("annotations") or {}))
        cur = by_name[cur].parent
    return [
        f"  {key}: {value}" + ("" if origin == name else f" (from queue {origin})")
        for key, (value, origin) in queue_policy.sources(chain).items()
    ]


def describe_job(client: Client, name: str, namespace: str, console: Console) -> None:
    explain = client.explain_job(name, namespace)
    job = client.get_job(name, namespace)
    manifest = json.loads(job.manifest) if job.manifest else {}
    spec = manifest.get("spec", {})
    lines = [
        ("Name", job.name),
        ("Namespace", job.namespace),
        ("UID", job.uid),
        ("Kind", job.kind or "-"),
        ("Queue", job.queue),
        (
            "Priority",
            f"{job.priority}" + (f" ({job.priority_class_name})" if job.priority_class_name else ""),
        ),
        ("Min available", str(job.min_available)),
        ("Request", short(dict(sorted(job.request.quantities.items())))),
        ("Phase", job.phase),
        ("Binding", f"{job.binding_phase} (generation {job.generation}, attempts {job.attempts})"),
        ("Cluster", job.cluster or "-"),
        ("Decision", explain.decision),
        ("Reason", explain.reason or "-"),
        *([("Wait kind", explain.reason_kind)] if explain.reason_kind else []),
        *([("Expected start", starts_in(job, time.time()))] if job.HasField("estimate_computed_at") else []),
        ("Retries", str(job.retry_count)),
        ("Created", job.created_at.ToJsonString()),
        ("Submitted by", _principal_of(explain.events, "Submitted")),
    ]
    if spec.get("networkTopology"):
        lines.append(("Network topology", json.dumps(spec["networkTopology"], sort_keys=True)))
    width = max(len(k) for k, _ in lines) + 1
    for k, v in lines:
        console.print(f"{k + ':':<{width}} {v}", highlight=False, soft_wrap=True)
    for line in gang_lines(manifest):
        console.print(line, highlight=False, soft_wrap=True)
    console.print("Tasks:", highlight=False)
    for t in job.tasks:
        console.print(
            f"  {t.name}: replicas {t.replicas}, pending {t.pending}, running {t.running}, "
            f"succeeded {t.succeeded}, failed {t.failed}",
            highlight=False,
        )
    if job.placements:
        console.print(_pods_heading(job), highlight=False)
        for p in job.placements:
            more = f"  {p.ip}" if p.ip else ""
            more += f"  restarts {p.restarts}" if p.restarts else ""
            more += f"  {p.cause}" if p.cause else ""
            name = p.name_in_cluster or p.pod
            console.print(f"  {name}  {p.task or '-'}  {p.node or '-'}  {p.phase}{more}", highlight=False)
    if explain.placement:
        console.print("Placement (per cluster):", highlight=False)
        for line in explain.placement:
            console.print(f"  {line}", highlight=False, soft_wrap=True)
    console.print("Events:", highlight=False)
    if not explain.events:
        console.print("  <none>", highlight=False)
    for e in explain.events:
        when = e.time.ToDatetime().strftime("%H:%M:%S")
        by = f" (by {e.principal})" if e.principal else ""
        console.print(
            f"  {when}  {e.kind:<7} {e.reason:<14} {e.source:<18} {e.message}{by}",
            highlight=False,
            soft_wrap=True,
        )
