"""Our data ↔ protobuf messages, in both directions, for the hub, the agent and the CLI alike.

Message → ours: ``units_of``, ``task_counts``, ``pod_placement``, ``node_records``,
``hypernode_records``. Ours → message: everything else, named after the message it builds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from vglobal.api.v1 import (
    agent_pb2,
    clusters_pb2,
    common_pb2,
    jobs_pb2,
    queues_pb2,
)
from vglobal.convert.cards import card_message as card_message
from vglobal.convert.cards import card_of as card_of
from vglobal.convert.cards import card_use as card_use
from vglobal.convert.cards import card_use_of as card_use_of
from vglobal.convert.cards import node_free as shown_free
from vglobal.convert.dispatch_queues import dispatch_queue as dispatch_queue
from vglobal.convert.dispatch_queues import dispatch_queues as dispatch_queues
from vglobal.convert.dispatch_queues import queue_affinity as queue_affinity
from vglobal.convert.dispatch_queues import queue_affinity_of as queue_affinity_of
from vglobal.convert.dispatch_queues import queue_limits as queue_limits
from vglobal.convert.times import set_time as set_time
from vglobal.convert.workflows import cron_job as cron_job
from vglobal.convert.workflows import job_flow as job_flow
from vglobal.convert.workflows import job_template as job_template
from vglobal.model.forms import PodPlacement, TaskCounts, tasks_from_json
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.queue_affinity import affinity_from_manifest
from vglobal.model.records import (
    ClusterRow,
    DispatchRow,
    EventRow,
    JobChange,
    JobRow,
    PlacedJob,
    PriorityClassRow,
    QueueRow,
    QueueSample,
    QueueUsage,
    StoredUsage,
)
from vglobal.model.resources import ResourceVector
from vglobal.model.workloads import kind_name

# ---- resources and times


def units(vec: Mapping[str, int]) -> agent_pb2.Units:
    return agent_pb2.Units(values={k: int(v) for k, v in sorted(vec.items())})


def units_of(msg: agent_pb2.Units) -> dict[str, int]:
    return {k: int(v) for k, v in msg.values.items() if v}


def resource_list(amounts: Mapping[str, int] | None) -> common_pb2.ResourceList:
    return common_pb2.ResourceList(quantities=ResourceVector(amounts or {}).to_quantities())


def set_estimate(
    msg: jobs_pb2.Job, start: float | None, cluster: str, ahead: int, computed_at: float
) -> None:
    """A waiting job's predicted start (epoch seconds; None = cannot tell) and its companions."""
    if start is not None:
        msg.estimated_start.FromDatetime(datetime.fromtimestamp(start, UTC))
    msg.estimated_cluster = cluster
    msg.jobs_ahead = ahead
    msg.estimate_computed_at.FromDatetime(datetime.fromtimestamp(computed_at, UTC))


# ---- a job's tasks and pods (the agent's report, the API's job)


# The messages' fields are the forms' JSON fields, by name.


def task_status(t: TaskCounts) -> agent_pb2.TaskStatus:
    return agent_pb2.TaskStatus(**t.to_json())


def task_counts(msg: agent_pb2.TaskStatus | jobs_pb2.TaskCounts) -> TaskCounts:
    return TaskCounts(msg.name, msg.replicas, msg.pending, msg.running, msg.succeeded, msg.failed)


def placement_report(p: PodPlacement) -> agent_pb2.PodPlacement:
    return agent_pb2.PodPlacement(
        pod=p.pod, task=p.task, node=p.node, phase=p.phase, uid=p.uid, cards=[card_use(u) for u in p.cards],
        name_in_cluster=p.name_in_cluster, ip=p.ip, restarts=p.restarts, cause=p.cause,
    )  # fmt: skip


def pod_placement(msg: agent_pb2.PodPlacement | jobs_pb2.Placement) -> PodPlacement:
    more = (msg.name_in_cluster, msg.ip, msg.restarts, msg.cause)
    if not isinstance(msg, agent_pb2.PodPlacement):
        return PodPlacement(msg.pod, msg.task, msg.node, msg.phase, "", (), *more)
    cards = tuple(card_use_of(u) for u in msg.cards)
    return PodPlacement(msg.pod, msg.task, msg.node, msg.phase, msg.uid, cards, *more)


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
        reason_kind=row.reason_kind,
        attempts=row.attempts,
        min_available=row.min_available,
        request=resource_list(row.request),
        tasks=[jobs_pb2.TaskCounts(**t.to_json()) for t in row.tasks],
        placements=[
            jobs_pb2.Placement(
                pod=p.pod,
                task=p.task,
                node=p.node,
                phase=p.phase,
                name_in_cluster=p.name_in_cluster,
                ip=p.ip,
                restarts=p.restarts,
                cause=p.cause,
            )
            for p in row.placements
        ],
        request_id=row.request_id or "",
        retry_count=row.retry_count,
        labels=dict(row.labels),
        submitted_by=row.submitted_by or "",
        kind=kind_name(row.manifest),
        spec_generation=row.spec_generation,
        observed_generation=row.observed_generation,
    )
    set_time(msg.created_at, row.created_at)
    set_time(msg.updated_at, row.updated_at)
    set_time(msg.finished_at, row.finished_at)
    if with_manifest:
        msg.manifest = json.dumps(row.manifest, sort_keys=True)
    return msg


_EVENT_TYPES = {
    "ADDED": jobs_pb2.JobEvent.ADDED,
    "MODIFIED": jobs_pb2.JobEvent.MODIFIED,
    "DELETED": jobs_pb2.JobEvent.DELETED,
}


def job_event(change: JobChange) -> jobs_pb2.JobEvent:
    """A logged change as a watcher gets it: the job as the change left it."""
    st = change.state
    msg = jobs_pb2.Job(
        uid=change.job_uid,
        name=change.name,
        namespace=change.namespace,
        queue=change.queue,
        priority_class_name=st.get("priorityClassName") or "",
        priority=int(st.get("priority") or 0),
        phase=st.get("phase") or "",
        binding_phase=st.get("bindingPhase") or "",
        cluster=st.get("cluster") or "",
        generation=int(st.get("generation") or 0),
        reason=st.get("reason") or "",
        reason_kind=st.get("reasonKind") or "",
        attempts=int(st.get("attempts") or 0),
        min_available=int(st.get("minAvailable") or 0),
        request=resource_list(st.get("request")),
        tasks=[jobs_pb2.TaskCounts(**t.to_json()) for t in tasks_from_json(st.get("tasks") or [])],
        request_id=st.get("requestId") or "",
        retry_count=int(st.get("retryCount") or 0),
        labels=dict(change.labels),
    )
    for field, key in ((msg.created_at, "createdAt"), (msg.updated_at, "updatedAt")):
        if st.get(key) is not None:
            field.FromNanoseconds(int(float(st[key]) * 1e9))
    out = jobs_pb2.JobEvent(type=_EVENT_TYPES[change.kind], revision=change.revision, job=msg)
    set_time(out.time, change.time)
    return out


def event(row: EventRow) -> common_pb2.Event:
    msg = common_pb2.Event(
        id=row.id,
        kind=row.kind,
        reason=row.reason,
        message=row.message,
        source=row.source,
        principal=row.principal or "",
    )
    set_time(msg.time, row.time)
    return msg


# ---- queues


def queue(row: QueueRow, usage: QueueUsage | None, decayed: StoredUsage | None = None) -> queues_pb2.Queue:
    """Deserved and effective capability come from the dispatcher's last cycle (row.status), the
    decayed usage from what the leader last stored."""
    usage = usage or QueueUsage()
    affinity = affinity_from_manifest(row.manifest)
    cap = row.status.get("capability", row.capability)
    deserved = row.status.get("deserved")
    budget = row.status.get("budget") or {}
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
        usage=resource_list({r: round(u) for r, u in decayed.rolled.items()} if decayed else None),
        usage_share=decayed.share if decayed else 0.0,
        running=resource_list(usage.placed),
        reserved=resource_list(
            {r: v - usage.placed.get(r, 0) for r, v in usage.allocated.items() if v > usage.placed.get(r, 0)}
        ),
        affinity=queue_affinity(affinity) if affinity is not None else None,
        budget_gpu_hours=float(budget.get("gpuHours", 0.0)),
        spent_gpu_hours=float(budget.get("spentGpuHours", 0.0)),
        budget_period_seconds=float(budget.get("periodSeconds", 0.0)),
    )


def priority_class(row: PriorityClassRow) -> queues_pb2.PriorityClass:
    return queues_pb2.PriorityClass(
        name=row.name,
        value=row.value,
        global_default=row.global_default,
        preemption_policy=row.preemption_policy,
    )


# ---- clusters: what an agent registers, as stored, and as the API shows it


def hypernode(h: ResolvedHyperNode) -> common_pb2.HyperNode:
    return common_pb2.HyperNode(
        name=h.name,
        tier=h.tier,
        tier_name=h.tier_name,
        parent=h.parent or "",
        nodes=sorted(h.nodes),
        children=list(h.children),
    )


def hypernode_records(msgs: Iterable[common_pb2.HyperNode]) -> list[dict[str, Any]]:
    """Reported HyperNodes as a cluster row keeps them."""
    return [
        {
            "name": h.name,
            "tier": h.tier,
            "tier_name": h.tier_name,
            "parent": h.parent,
            "nodes": list(h.nodes),
            "children": list(h.children),
        }
        for h in msgs
    ]


def pool_records(msgs: Iterable[agent_pb2.NodePool]) -> list[dict[str, Any]]:
    """Reported node pools as a cluster row keeps them."""
    return [
        {
            "name": p.name,
            "allocatable": units_of(p.allocatable),
            "labels": dict(p.labels),
            "current": p.current,
            "max": p.max,
            "provision_seconds": p.provision_seconds,
        }
        for p in msgs
    ]


def node_records(msgs: Iterable[agent_pb2.NodeInventory]) -> list[dict[str, Any]]:
    """Reported nodes as a cluster row keeps them (free capacity apart)."""
    out = []
    for n in msgs:
        node: dict[str, Any] = {
            "name": n.name,
            "labels": dict(n.labels),
            "allocatable": units_of(n.allocatable),
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.taints],
            "unschedulable": n.unschedulable,
        }
        if n.gpus:
            node["gpus"] = [
                {"index": g.index, "memory_mib": g.memory_mib, "model": g.model, "mig": g.mig} for g in n.gpus
            ]
        out.append(node)
    return out


def node_work(placed: Iterable[PlacedJob]) -> list[clusters_pb2.NodeWork]:
    """Per node (by name), each job's pods that hold room there."""
    by_node: dict[str, dict[tuple[str, str], clusters_pb2.NodeJob]] = {}
    for p in placed:
        for pod in p.placements:
            if not pod.holds_node:
                continue
            jobs_here = by_node.setdefault(pod.node, {})
            key = (p.namespace, p.name)
            if key not in jobs_here:
                jobs_here[key] = clusters_pb2.NodeJob(
                    namespace=p.namespace, name=p.name, queue=p.queue, phase=p.phase
                )
            jobs_here[key].pods.append(pod.pod)
    return [clusters_pb2.NodeWork(node=node, jobs=list(by_node[node].values())) for node in sorted(by_node)]


def taint_text(t: dict[str, Any]) -> str:
    """A node taint as kubectl prints it: ``key=value:Effect`` (``key:Effect`` without a value)."""
    value = f"={t['value']}" if t.get("value") else ""
    return f"{t.get('key', '')}{value}:{t.get('effect', '')}"


def cluster(row: ClusterRow, *, running_jobs: int = 0, with_nodes: bool = False) -> clusters_pb2.Cluster:
    capacity: dict[str, int] = {}
    free: dict[str, int] = {}
    for node in row.nodes:
        for k, v in node.get("allocatable", {}).items():
            capacity[k] = capacity.get(k, 0) + int(v)
    allocatable = {n["name"]: n.get("allocatable", {}) for n in row.nodes}
    node_free = {
        name: shown_free(amounts, allocatable.get(name, {}), row.devices.get(name))
        for name, amounts in row.free.items()
    }
    for amounts in node_free.values():
        for k, v in amounts.items():
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
    if row.not_ready_since is not None:
        set_time(msg.not_ready_since, row.not_ready_since)
    if with_nodes:
        for node in row.nodes:
            msg.node_list.append(
                clusters_pb2.Node(
                    name=node["name"],
                    labels=node.get("labels", {}),
                    allocatable=resource_list(node.get("allocatable")),
                    free=resource_list(node_free.get(node["name"], {})),
                    taints=[taint_text(t) for t in node.get("taints", [])],
                    unschedulable=bool(node.get("unschedulable")),
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
        for p in row.pools:
            msg.pools.append(
                clusters_pb2.ClusterNodePool(
                    name=p["name"],
                    allocatable=resource_list(p.get("allocatable")),
                    labels=p.get("labels", {}),
                    current=int(p.get("current", 0)),
                    max=int(p.get("max", 0)),
                    provision_seconds=float(p.get("provision_seconds", 0.0)),
                )
            )
    return msg


# ---- the dashboard's reads


def dispatch(row: DispatchRow) -> jobs_pb2.JobDispatch:
    msg = jobs_pb2.JobDispatch(
        generation=row.generation,
        cluster=row.cluster,
        outcome=row.outcome,
        fenced=row.fenced,
        reason=row.reason,
    )
    set_time(msg.dispatched_at, row.dispatched_at)
    set_time(msg.ended_at, row.ended_at)
    return msg


def queue_sample(s: QueueSample) -> queues_pb2.QueueSample:
    msg = queues_pb2.QueueSample(
        allocated=resource_list(s.allocated),
        deserved=resource_list(s.deserved),
        capability=resource_list(s.capability),
        guarantee=resource_list(s.guarantee),
        pending_jobs=s.pending,
        running_jobs=s.running,
        share=s.share,
    )
    set_time(msg.time, s.time)
    return msg
