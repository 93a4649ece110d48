"""The hub's messages as plain dicts for templates and the JSON endpoints."""

from __future__ import annotations

import json
from typing import Any

import yaml

from vglobal.api.v1 import clusters_pb2, common_pb2, jobs_pb2, queues_pb2
from vglobal.convert import hypernode_records
from vglobal.dashboard.fmt import FINISHED, amount, ts


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
            {"pod": p.pod, "node": p.node, "phase": p.phase, "task": p.task} for p in j.placements
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


def quantities(r: common_pb2.ResourceList) -> dict[str, str]:
    return dict(r.quantities)


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
        "hypernodes": hypernode_records(c.hypernodes),
        "work": {w.node: [node_job(j) for j in w.jobs] for w in c.work},
    }
