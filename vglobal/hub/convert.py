"""Store rows and canonical units to protobuf messages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from vglobal.api.v1 import clusters_pb2, common_pb2, jobs_pb2, queues_pb2
from vglobal.model.resources import ResourceVector
from vglobal.store.rows import ClusterRow, EventRow, JobRow, PriorityClassRow, QueueRow, QueueUsage


def resource_list(units: Mapping[str, int] | None) -> common_pb2.ResourceList:
    return common_pb2.ResourceList(quantities=ResourceVector(units or {}).to_quantities())


def set_time(field: Timestamp, dt: datetime | None) -> None:
    if dt is not None:
        field.FromDatetime(dt)


def job(row: JobRow, *, with_manifest: bool = False) -> jobs_pb2.Job:
    msg = jobs_pb2.Job(
        uid=row.uid,
        name=row.name,
        namespace=row.namespace,
        queue=row.queue,
        priority_class_name=row.priority_class_name or "",
        priority=row.priority,
        phase=row.phase,
        binding_phase=row.binding_phase,
        cluster=row.cluster or "",
        generation=row.generation,
        reason=row.reason,
        attempts=row.attempts,
        min_available=row.min_available,
        request=resource_list(row.request),
        tasks=[jobs_pb2.TaskCounts(**t) for t in row.tasks],
        placements=[jobs_pb2.Placement(**p) for p in row.placements],
        request_id=row.request_id or "",
        retry_count=row.retry_count,
    )
    set_time(msg.created_at, row.created_at)
    set_time(msg.updated_at, row.updated_at)
    if with_manifest:
        msg.manifest = json.dumps(row.manifest, sort_keys=True)
    return msg


def queue(row: QueueRow, usage: QueueUsage | None) -> queues_pb2.Queue:
    """Deserved and effective capability come from the dispatcher's last cycle (row.status)."""
    usage = usage or QueueUsage()
    cap = row.status.get("capability", row.capability)
    deserved = row.status.get("deserved")
    return queues_pb2.Queue(
        name=row.name,
        parent=row.parent or "",
        weight=row.weight,
        priority=row.priority,
        state=row.state,
        reclaimable=row.reclaimable,
        capability=resource_list(cap),
        deserved=resource_list(deserved if deserved is not None else row.deserved),
        guarantee=resource_list(row.guarantee),
        allocated=resource_list(usage.allocated),
        pending_jobs=usage.pending,
        running_jobs=usage.running,
        spec_capability=resource_list(row.capability),
        manifest=json.dumps(row.manifest, sort_keys=True),
    )


def priority_class(row: PriorityClassRow) -> queues_pb2.PriorityClass:
    return queues_pb2.PriorityClass(
        name=row.name,
        value=row.value,
        global_default=row.global_default,
        preemption_policy=row.preemption_policy,
    )


def cluster(row: ClusterRow, *, running_jobs: int = 0, with_nodes: bool = False) -> clusters_pb2.Cluster:
    capacity: dict[str, int] = {}
    free: dict[str, int] = {}
    for node in row.nodes:
        for k, v in node.get("allocatable", {}).items():
            capacity[k] = capacity.get(k, 0) + int(v)
    for units in row.free.values():
        for k, v in units.items():
            free[k] = free.get(k, 0) + int(v)
    msg = clusters_pb2.Cluster(
        name=row.name,
        state=row.effective_state,
        labels=row.labels,
        nodes=len(row.nodes),
        capacity=resource_list(capacity),
        free=resource_list(free),
        running_jobs=running_jobs,
    )
    set_time(msg.last_heartbeat, row.last_heartbeat)
    if with_nodes:
        for node in row.nodes:
            msg.node_list.append(
                clusters_pb2.Node(
                    name=node["name"],
                    labels=node.get("labels", {}),
                    allocatable=resource_list(node.get("allocatable")),
                    free=resource_list(row.free.get(node["name"], {})),
                )
            )
        for h in row.hypernodes:
            msg.hypernodes.append(
                common_pb2.HyperNode(
                    name=h["name"],
                    tier=h["tier"],
                    tier_name=h.get("tier_name", ""),
                    parent=h.get("parent", ""),
                    nodes=h.get("nodes", []),
                    children=h.get("children", []),
                )
            )
    return msg


def event(row: EventRow) -> common_pb2.Event:
    msg = common_pb2.Event(
        id=row.id, kind=row.kind, reason=row.reason, message=row.message, source=row.source
    )
    set_time(msg.time, row.time)
    return msg
