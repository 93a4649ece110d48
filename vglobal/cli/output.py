"""Rows for `vglobal get`: the same fields in tables, JSON and YAML."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml
from google.protobuf.timestamp_pb2 import Timestamp
from rich.console import Console
from rich.table import Table

from vglobal import convert
from vglobal.api.v1 import clusters_pb2, common_pb2, cronjobs_pb2, jobflows_pb2, jobs_pb2, queues_pb2


def quantities(rl: common_pb2.ResourceList) -> dict[str, str]:
    return dict(sorted(rl.quantities.items()))


def short(q: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in q.items()) or "-"


def job_row(j: jobs_pb2.Job) -> dict[str, Any]:
    return {
        "name": j.name,
        "namespace": j.namespace,
        "kind": j.kind,
        "uid": j.uid,
        "queue": j.queue,
        "phase": j.phase,
        "bindingPhase": j.binding_phase,
        "cluster": j.cluster,
        "generation": j.generation,
        "reason": j.reason,
        "reasonKind": j.reason_kind,
        "priority": j.priority,
        "priorityClassName": j.priority_class_name,
        "minAvailable": j.min_available,
        "attempts": j.attempts,
        "retryCount": j.retry_count,
        "request": quantities(j.request),
        "tasks": [convert.task_counts(t).to_json() for t in j.tasks],
        "createdAt": j.created_at.ToJsonString() if j.HasField("created_at") else "",
    }


def queue_row(q: queues_pb2.Queue) -> dict[str, Any]:
    return {
        "name": q.name,
        "parent": q.parent,
        "weight": q.weight,
        "priority": q.priority,
        "state": q.state,
        "reclaimable": q.reclaimable,
        "capability": quantities(q.capability),
        "deserved": quantities(q.deserved),
        "guarantee": quantities(q.guarantee),
        "allocated": quantities(q.allocated),
        # Of allocated: held by placed pods, and held for gangs not all placed yet.
        "running": quantities(q.running),
        "reserved": quantities(q.reserved),
        "pendingJobs": q.pending_jobs,
        "runningJobs": q.running_jobs,
        # Fair share over time: decayed resource-seconds, and max over resources of that as an
        # allocation (usage·ln2/half-life) over deserved; 1 = at its share.
        "usage": quantities(q.usage),
        "usageShare": round(q.usage_share, 3),
    }


def cluster_row(c: clusters_pb2.Cluster) -> dict[str, Any]:
    return {
        "name": c.name,
        "state": c.state,
        "labels": dict(sorted(c.labels.items())),
        "nodes": c.nodes,
        "capacity": quantities(c.capacity),
        "free": quantities(c.free),
        "runningJobs": c.running_jobs,
        "lastHeartbeat": c.last_heartbeat.ToJsonString() if c.HasField("last_heartbeat") else "",
    }


def stamp(msg: Any, field: str) -> str:
    """A message's Timestamp field in RFC 3339, or empty when unset."""
    return str(getattr(msg, field).ToJsonString()) if msg.HasField(field) else ""


def age(t: Timestamp | None, now: float | None = None) -> str:
    """How long ago, as kubectl shows it: 45s, 12m, 5h, 3d."""
    if t is None or (t.seconds == 0 and t.nanos == 0):
        return ""
    seconds = max(int((now if now is not None else time.time()) - t.seconds), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def cronjob_row(c: cronjobs_pb2.CronJob) -> dict[str, Any]:
    return {
        "name": c.name,
        "namespace": c.namespace,
        "schedule": c.schedule,
        "timeZone": c.time_zone or "UTC",
        "suspend": c.suspend,
        "active": len(c.active),
        "activeJobs": list(c.active),
        "lastSchedule": stamp(c, "last_schedule_time"),
        "lastSuccessful": stamp(c, "last_successful_time"),
        "nextSchedule": stamp(c, "next_schedule_time"),
        "concurrencyPolicy": c.concurrency_policy,
        "startingDeadlineSeconds": (
            c.starting_deadline_seconds if c.HasField("starting_deadline_seconds") else None
        ),
        "queue": c.queue,
        "age": age(c.created_at if c.HasField("created_at") else None),
    }


def jobflow_row(f: jobflows_pb2.JobFlow) -> dict[str, Any]:
    done = sum(1 for s in f.steps if s.phase == "Completed")
    return {
        "name": f.name,
        "namespace": f.namespace,
        "phase": f.phase,
        "completed": f"{done}/{len(f.steps)}",
        "retainPolicy": f.job_retain_policy,
        "steps": [
            {"name": s.name, "job": s.job, "phase": s.phase, "dependsOn": list(s.depends_on)} for s in f.steps
        ],
        "age": age(f.created_at if f.HasField("created_at") else None),
    }


def jobtemplate_row(t: jobflows_pb2.JobTemplate) -> dict[str, Any]:
    return {
        "name": t.name,
        "namespace": t.namespace,
        "queue": t.queue,
        "tasks": ",".join(t.tasks),
        "age": age(t.created_at if t.HasField("created_at") else None),
    }


def priority_class_row(pc: queues_pb2.PriorityClass) -> dict[str, Any]:
    return {
        "name": pc.name,
        "value": pc.value,
        "globalDefault": pc.global_default,
        "preemptionPolicy": pc.preemption_policy,
    }


def hypernode_row(h: common_pb2.HyperNode) -> dict[str, Any]:
    return {
        "name": h.name,
        "tier": h.tier,
        "tierName": h.tier_name,
        "parent": h.parent,
        "children": list(h.children),
        "nodes": list(h.nodes),
    }


COLUMNS: dict[str, dict[str, list[str]]] = {
    "jobs": {
        "table": ["namespace", "name", "kind", "queue", "phase", "bindingPhase", "cluster", "reason"],
        "wide": [
            "namespace",
            "name",
            "kind",
            "queue",
            "priority",
            "phase",
            "bindingPhase",
            "cluster",
            "generation",
            "attempts",
            "request",
            "reason",
        ],
    },
    "queues": {
        "table": [
            "name",
            "parent",
            "weight",
            "state",
            "allocated",
            "usageShare",
            "pendingJobs",
            "runningJobs",
        ],
        "wide": [
            "name",
            "parent",
            "weight",
            "priority",
            "state",
            "capability",
            "deserved",
            "guarantee",
            "allocated",
            "running",
            "reserved",
            "usage",
            "usageShare",
            "pendingJobs",
            "runningJobs",
        ],
    },
    "cronjobs": {
        "table": ["namespace", "name", "schedule", "timeZone", "suspend", "active", "lastSchedule", "age"],
        "wide": [
            "namespace",
            "name",
            "schedule",
            "timeZone",
            "suspend",
            "concurrencyPolicy",
            "active",
            "lastSchedule",
            "lastSuccessful",
            "nextSchedule",
            "queue",
            "age",
        ],
    },
    "jobflows": {
        "table": ["namespace", "name", "phase", "completed", "age"],
        "wide": ["namespace", "name", "phase", "completed", "retainPolicy", "steps", "age"],
    },
    "jobtemplates": {
        "table": ["namespace", "name", "queue", "tasks", "age"],
        "wide": ["namespace", "name", "queue", "tasks", "age"],
    },
    "priorityclasses": {
        "table": ["name", "value", "globalDefault"],
        "wide": ["name", "value", "globalDefault", "preemptionPolicy"],
    },
    "clusters": {
        "table": ["name", "state", "nodes", "capacity", "free", "runningJobs"],
        "wide": ["name", "state", "labels", "nodes", "capacity", "free", "runningJobs", "lastHeartbeat"],
    },
    "nodes": {
        "table": ["name", "cluster", "status", "allocatable", "free"],
        "wide": ["name", "cluster", "status", "allocatable", "free", "taints", "labels"],
    },
}


def cell(value: Any) -> str:
    if isinstance(value, Mapping):
        return short(value)
    if isinstance(value, list):
        return (
            ",".join(f"{v['name']}={v['phase']}" if isinstance(v, Mapping) else str(v) for v in value) or "-"
        )
    if value in ("", None):
        return "-"
    return str(value)


def table(kind: str, rows: Sequence[Mapping[str, Any]], wide: bool, header: bool = True) -> Table:
    cols = COLUMNS[kind]["wide" if wide else "table"]
    t = Table(box=None, header_style="bold", pad_edge=False, show_header=header)
    for c in cols:
        t.add_column(c.upper(), overflow="fold" if c == "reason" else "ellipsis")
    for r in rows:
        t.add_row(*[cell(r.get(c)) for c in cols])
    return t


# What `-o name` prints before each name, as kubectl does (resource.group/name).
RESOURCE_NAMES = {
    "jobs": "job.batch.volcano.sh",
    "queues": "queue.scheduling.volcano.sh",
    "priorityclasses": "priorityclass.scheduling.k8s.io",
    "clusters": "cluster.vglobal.io",
    "nodes": "node",
    "cronjobs": "cronjob.batch.volcano.sh",
    "jobflows": "jobflow.flow.volcano.sh",
    "jobtemplates": "jobtemplate.flow.volcano.sh",
    "hypernodes": "hypernode.topology.volcano.sh",
}


def plain_table(
    kind: str,
    rows: Sequence[Mapping[str, Any]],
    wide: bool,
    header: bool = True,
    widths: Sequence[int] | None = None,
) -> str:
    """The table as text as wide as its cells need, nothing cut (kubectl's layout: columns three
    spaces apart): for pipes, logs and ``-o wide``. ``widths``: at least these (a watch keeps the
    first listing's)."""
    cols = COLUMNS[kind]["wide" if wide else "table"]
    lines = [[c.upper() for c in cols]] if header else []
    lines += [[cell(r.get(c)).replace("\n", " ") for c in cols] for r in rows]
    least = widths or [0] * len(cols)
    widths = [max([least[i], *(len(line[i]) for line in lines)]) for i in range(len(cols))]
    return "".join(
        "   ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() + "\n" for line in lines
    )


def print_table(
    kind: str, rows: Sequence[Mapping[str, Any]], fmt: str, console: Console, header: bool = True
) -> None:
    """On a terminal a table fits its width (long reasons fold); elsewhere, and always with
    ``-o wide``, nothing is cut."""
    wide = fmt == "wide"
    if console.is_terminal and not wide:
        console.print(table(kind, rows, wide=False, header=header))
    else:
        console.file.write(plain_table(kind, rows, wide, header))


def emit(kind: str, rows: list[dict[str, Any]], fmt: str, console: Console) -> None:
    if fmt == "json":
        print(json.dumps(rows, indent=2))
    elif fmt == "yaml":
        print(yaml.safe_dump(rows, sort_keys=False), end="")
    elif fmt == "name":
        sys.stdout.write("".join(f"{RESOURCE_NAMES[kind]}/{r['name']}\n" for r in rows))
    else:
        print_table(kind, rows, fmt, console)


def emit_pages(kind: str, pages: Iterable[list[dict[str, Any]]], fmt: str, console: Console) -> None:
    """``emit`` of rows that come page by page, each printed as it comes (the whole list is never
    held): the same JSON and YAML as ``emit``; a table per page, aligned within its page, as
    kubectl prints chunks."""
    first = True
    for rows in pages:
        if fmt == "json":
            for r in rows:
                item = json.dumps(r, indent=2).replace("\n", "\n  ")
                sys.stdout.write(("[\n  " if first else ",\n  ") + item)
                first = False
        elif fmt == "yaml":
            if rows:
                sys.stdout.write(yaml.safe_dump(rows, sort_keys=False))
                first = False
        elif fmt == "name":
            sys.stdout.write("".join(f"{RESOURCE_NAMES[kind]}/{r['name']}\n" for r in rows))
        elif rows or first:
            print_table(kind, rows, fmt, console, header=first)
            first = False
    if fmt == "json":
        sys.stdout.write("[]\n" if first else "\n]\n")
    elif fmt == "yaml" and first:
        sys.stdout.write("[]\n")
    sys.stdout.flush()
