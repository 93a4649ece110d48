"""The hub's messages as display rows: what `vglobal get` prints and what the dashboard shows.

``*_row``: the fields of `vglobal get` (kubectl's camelCase names, in tables, JSON and YAML).
``job``, ``queue``, ``cluster``, ``cronjob``, ...: the dashboard's pages and JSON endpoints (snake_case, for
templates). Both read resource lists, times and ages through the same helpers below.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import yaml
from google.protobuf.timestamp_pb2 import Timestamp

from vglobal import convert
from vglobal.api.v1 import clusters_pb2, common_pb2, cronjobs_pb2, jobflows_pb2, jobs_pb2, queues_pb2
from vglobal.model.quantity import QuantityError, parse_decimal
from vglobal.model.queue_budget import hours_text, period_text

FINISHED = frozenset({"Completed", "Failed", "Aborted", "Terminated", "Succeed", "Succeeded"})


def quantities(rl: common_pb2.ResourceList) -> dict[str, str]:
    return dict(sorted(rl.quantities.items()))


def amount(value: Any) -> float:
    """A quantity string as a number of whole units (bytes, cores, devices); 0 when unparsable."""
    try:
        return float(parse_decimal(value))
    except QuantityError:
        return 0.0


def ts(value: Timestamp | None) -> datetime | None:
    """A Timestamp as an aware datetime, or None when unset."""
    if value is None or (value.seconds == 0 and value.nanos == 0):
        return None
    return value.ToDatetime(tzinfo=UTC)


def stamp(msg: Any, field: str) -> str:
    """A message's Timestamp field in RFC 3339, or empty when unset."""
    return str(getattr(msg, field).ToJsonString()) if msg.HasField(field) else ""


def age(
    value: Timestamp | datetime | str | None, now: float | datetime | None = None, *, unset: str = ""
) -> str:
    """How long ago, as kubectl shows it: 45s, 12m, 5h, 3d; ``unset`` when there is no time.
    ``value``: a Timestamp, a datetime, or one in ISO 8601; ``now``: epoch seconds or a datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value) if value else None
    if isinstance(value, Timestamp):
        then: float | None = value.seconds if value.seconds or value.nanos else None
    else:
        then = value.timestamp() if value is not None else None
    if then is None:
        return unset
    if isinstance(now, datetime):
        now = now.timestamp()
    seconds = max(int((now if now is not None else time.time()) - then), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# `vglobal get`

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
        "estimatedStart": j.estimated_start.ToJsonString() if j.HasField("estimated_start") else "",
        "startsIn": starts_in(j, time.time()) if j.HasField("estimate_computed_at") else "",
        # As Kubernetes shows them: the generation applied, and the one its cluster carries out.
        "metadata": {"generation": j.spec_generation},
        "status": {"observedGeneration": j.observed_generation},
    }


def _span(seconds: float) -> str:
    if seconds < 90:
        return f"{max(0, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def starts_in(j: jobs_pb2.Job, now: float) -> str:
    """A waiting job's predicted start in words: "in about 40 min on gpu-west, behind 3 jobs of
    queue training", or "unknown" when the hub cannot tell; "" when it has computed none."""
    if not j.HasField("estimate_computed_at"):
        return ""
    behind = f"behind {j.jobs_ahead} job{'s' if j.jobs_ahead != 1 else ''} of queue {j.queue}"
    if not j.HasField("estimated_start"):
        return f"unknown ({behind})" if j.jobs_ahead else "unknown"
    wait = j.estimated_start.ToDatetime(tzinfo=UTC).timestamp() - now
    when = "at the next cycle" if wait <= 0 else f"in about {_span(wait)}"
    where = f" on {j.estimated_cluster}" if j.estimated_cluster else ""
    return f"{when}{where}, {behind}" if j.jobs_ahead else f"{when}{where}"


def budget_text(q: queues_pb2.Queue) -> str:
    """"9,120 of 10,000 GPU-hours over 30 days (91 %)", or "" for a queue without a budget."""
    if q.budget_gpu_hours <= 0:
        return ""
    span = period_text(q.budget_period_seconds)
    pct = 100 * q.spent_gpu_hours / q.budget_gpu_hours
    spent, budget = hours_text(q.spent_gpu_hours), hours_text(q.budget_gpu_hours)
    return f"{spent} of {budget} GPU-hours over {span} ({pct:.0f} %)"


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
        # GPU-hour budget: spent over the period against it ("" without one)
        "budget": budget_text(q),
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


def namespace_row(ns: queues_pb2.Namespace) -> dict[str, Any]:
    meta = json.loads(ns.manifest or "{}").get("metadata") or {}
    return {"name": ns.name, "queue": ns.queue, "labels": dict(meta.get("labels") or {})}


def hypernode_row(h: common_pb2.HyperNode) -> dict[str, Any]:
    return {
        "name": h.name,
        "tier": h.tier,
        "tierName": h.tier_name,
        "parent": h.parent,
        "children": list(h.children),
        "nodes": list(h.nodes),
    }


# The dashboard

def job(j: jobs_pb2.Job) -> dict[str, Any]:
    return {
        "name": j.name,
        "namespace": j.namespace or "default",
        "uid": j.uid,
        "kind": j.kind,
        "queue": j.queue,
        "phase": j.phase,
        "binding_phase": j.binding_phase,
        "cluster": j.cluster,
        "generation": j.generation,
        "reason": j.reason,
        "reason_kind": j.reason_kind,
        "priority": j.priority,
        "priority_class": j.priority_class_name,
        "attempts": j.attempts,
        "retry_count": j.retry_count,
        "min_available": j.min_available,
        "created": ts(j.created_at),
        "updated": ts(j.updated_at),
        "labels": dict(j.labels),
        "finished": j.phase in FINISHED,
        "submitted_by": getattr(j, "submitted_by", ""),
        "starts": starts_in(j, time.time()),
        "tasks": [
            {
                "name": t.name,
                "replicas": t.replicas,
                "pending": t.pending,
                "running": t.running,
                "succeeded": t.succeeded,
                "failed": t.failed,
            }
            for t in j.tasks
        ],
        "placements": [
            {"pod": p.pod, "node": p.node, "phase": p.phase, "task": p.task,
             "name": p.name_in_cluster or p.pod, "ip": p.ip, "restarts": p.restarts, "cause": p.cause}
            for p in j.placements
        ],
    }


def manifest_yaml(manifest: str) -> str:
    if not manifest:
        return ""
    try:
        return yaml.safe_dump(json.loads(manifest), sort_keys=False)
    except ValueError:
        return manifest


def event(e: common_pb2.Event) -> dict[str, Any]:
    return {
        "time": ts(e.time),
        "kind": e.kind,
        "reason": e.reason,
        "message": e.message,
        "source": e.source,
        "principal": e.principal,
    }


def queue(q: queues_pb2.Queue) -> dict[str, Any]:
    lists = {
        "guarantee": quantities(q.guarantee),
        "deserved": quantities(q.deserved),
        "allocated": quantities(q.allocated),
        "capability": quantities(q.capability),
    }
    return {
        "name": q.name,
        "parent": q.parent,
        "weight": q.weight,
        "priority": q.priority,
        "state": q.state,
        "reclaimable": q.reclaimable,
        "pending": q.pending_jobs,
        "running": q.running_jobs,
        "spec_capability": quantities(q.spec_capability),
        "manifest": q.manifest,
        "manifest_yaml": manifest_yaml(q.manifest),
        **lists,
        "numbers": {k: {r: amount(v) for r, v in lst.items()} for k, lst in lists.items()},
    }


def node(n: clusters_pb2.Node) -> dict[str, Any]:
    return {
        "name": n.name,
        "labels": dict(n.labels),
        "allocatable": quantities(n.allocatable),
        "free": quantities(n.free),
    }


def node_job(j: clusters_pb2.NodeJob) -> dict[str, Any]:
    return {
        "namespace": j.namespace,
        "name": j.name,
        "queue": j.queue,
        "phase": j.phase,
        "pods": list(j.pods),
    }


def cluster(c: clusters_pb2.Cluster) -> dict[str, Any]:
    return {
        "name": c.name,
        "state": c.state,
        "labels": dict(c.labels),
        "nodes": c.nodes,
        "capacity": quantities(c.capacity),
        "free": quantities(c.free),
        "last_heartbeat": ts(c.last_heartbeat),
        "running_jobs": c.running_jobs,
        "node_list": [node(n) for n in c.node_list],
        "hypernodes": convert.hypernode_records(c.hypernodes),
        "work": {w.node: [node_job(j) for j in w.jobs] for w in c.work},
    }


def dispatch(d: jobs_pb2.JobDispatch) -> dict[str, Any]:
    return {
        "generation": d.generation,
        "cluster": d.cluster,
        "dispatched": ts(d.dispatched_at),
        "ended": ts(d.ended_at),
        "outcome": d.outcome,
        "fenced": d.fenced,
        "reason": d.reason,
    }


def cronjob(c: cronjobs_pb2.CronJob) -> dict[str, Any]:
    return {
        "name": c.name,
        "namespace": c.namespace,
        "schedule": c.schedule,
        "time_zone": c.time_zone or "UTC",
        "suspend": c.suspend,
        "queue": c.queue,
        "active": list(c.active),
        "concurrency_policy": c.concurrency_policy,
        "last_schedule": ts(c.last_schedule_time),
        "last_success": ts(c.last_successful_time),
        "next": ts(c.next_schedule_time),
    }


def jobflow(f: jobflows_pb2.JobFlow) -> dict[str, Any]:
    return {
        "name": f.name,
        "namespace": f.namespace,
        "phase": f.phase,
        "created": ts(f.created_at),
        "steps": [
            {
                "name": s.name,
                "job": s.job,
                "phase": s.phase,
                "depends_on": list(s.depends_on),
                "created": ts(s.created_at),
                "finished": ts(s.finished_at),
            }
            for s in f.steps
        ],
        "dag": [(s.name, s.phase, list(s.depends_on)) for s in f.steps],
    }


def pods(j: jobs_pb2.Job) -> list[dict[str, Any]]:
    """The job's pods as their cluster names and reports them (``get pods``, the Pods page)."""
    return [
        {
            "name": p.name_in_cluster or p.pod,
            "namespace": j.namespace or "default",
            "job": j.name,
            "task": p.task,
            "cluster": j.cluster,
            "node": p.node,
            "ip": p.ip,
            "status": p.phase,
            "restarts": p.restarts,
            "cause": p.cause,
        }
        for p in j.placements
    ]
