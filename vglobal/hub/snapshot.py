"""Reading one admission Snapshot out of Postgres (inside the dispatch cycle's transaction)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from vglobal.admission import (
    ClusterSnap,
    HyperNodeSnap,
    NodeSnap,
    PendingJob,
    QueueSnap,
    RunningJob,
    Snapshot,
)
from vglobal.config import HubSettings
from vglobal.model.phases import BindingPhase
from vglobal.model.resources import ResourceVector
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.bindings import BindingView
from vglobal.store.rows import ClusterRow

NOT_YET_PLACED = (BindingPhase.Dispatched.value, BindingPhase.Bound.value)


def gang_of(view: BindingView) -> tuple[tuple[ResourceVector, int], ...]:
    return tuple((ResourceVector(units), int(count)) for units, count in view.gang)


def reserve(free: dict[str, ResourceVector], gang: Sequence[tuple[ResourceVector, int]]) -> None:
    """Take a dispatched gang's pods out of the nodes' free capacity (first-fit decreasing).

    Its agent has not placed the pods yet, so the heartbeats do not show them: without this, the
    next cycle would hand the same capacity to another job.
    """
    pods = sorted(
        (req for req, count in gang for _ in range(count)),
        key=lambda r: sorted(r.items(), key=lambda kv: -kv[1]),
        reverse=True,
    )
    names = sorted(free)
    for req in pods:
        for name in names:
            if req.fits_in(free[name]):
                free[name] = free[name] - req
                break


def pod_task(pod: str, job_name: str) -> str:
    """`<job>-<task>-<index>` → task."""
    rest = pod[len(job_name) + 1 :] if pod.startswith(job_name + "-") else pod
    return rest.rsplit("-", 1)[0]


def placements_of(view: BindingView) -> Mapping[str, ResourceVector]:
    per_node: dict[str, ResourceVector] = {}
    for p in view.placements:
        node = p.get("node")
        if not node or p.get("phase") in ("Succeeded", "Failed"):
            continue
        req = ResourceVector(view.pod_requests.get(pod_task(p["pod"], view.name), {}))
        per_node[node] = per_node.get(node, ResourceVector()) + req
    return per_node


def cluster_snap(row: ClusterRow, holding: Sequence[BindingView]) -> ClusterSnap:
    schedulable = row.effective_state == "Ready"
    free: dict[str, ResourceVector] = {}
    allocatable: dict[str, ResourceVector] = {}
    labels: dict[str, Mapping[str, str]] = {}
    for node in row.nodes:
        name = node["name"]
        allocatable[name] = ResourceVector(node.get("allocatable", {}))
        labels[name] = node.get("labels", {})
        usable = not node.get("unschedulable") and not any(
            t.get("effect") in ("NoSchedule", "NoExecute") for t in node.get("taints", [])
        )
        free[name] = ResourceVector(row.free.get(name, {})) if usable else ResourceVector()
    for b in holding:
        if b.cluster == row.name and b.phase in NOT_YET_PLACED:
            reserve(free, gang_of(b))
    nodes = tuple(
        NodeSnap(name=n, free=free[n], allocatable=allocatable[n], labels=labels[n])
        for n in sorted(allocatable)
    )
    hypernodes = tuple(
        HyperNodeSnap(
            name=h["name"],
            tier=int(h["tier"]),
            parent=h.get("parent") or None,
            nodes=tuple(h.get("nodes", ())),
        )
        for h in row.hypernodes
    )
    return ClusterSnap(
        name=row.name, labels=row.labels, nodes=nodes, schedulable=schedulable, hypernodes=hypernodes
    )


def pending_job(view: BindingView, now: float) -> PendingJob:
    allowed = view.placement.get("clusters")
    topo = view.placement.get("topology")
    excluded = frozenset(c for c, until in view.excluded_clusters.items() if float(until) > now)
    return PendingJob(
        uid=view.job_uid,
        name=view.name,
        namespace=view.namespace,
        queue=view.queue,
        priority=view.priority,
        created=view.created_at.timestamp(),
        waiting_since=view.waiting_since.timestamp(),
        request=ResourceVector(view.request),
        gang=gang_of(view),
        allowed_clusters=frozenset(allowed) if allowed is not None else None,
        cluster_selector=view.placement.get("selector") or {},
        excluded_clusters=excluded,
        network_topology=(topo["mode"], topo.get("tier")) if topo else None,
    )


def running_job(view: BindingView) -> RunningJob:
    return RunningJob(
        uid=view.job_uid,
        queue=view.queue,
        cluster=view.cluster or "",
        priority=view.priority,
        created=view.created_at.timestamp(),
        request=ResourceVector(view.request),
        placements=placements_of(view),
    )


def _opt(units: dict[str, Any] | None) -> ResourceVector | None:
    return None if units is None else ResourceVector(units)


def build_snapshot(settings: HubSettings, *, session: Session) -> Snapshot:
    now = clusters_repo.db_now(session=session)
    holding = bindings_repo.holding(session=session)
    usage = queues_repo.usage(session=session)
    queues = tuple(
        QueueSnap(
            name=q.name,
            parent=q.parent or "root",
            weight=q.weight,
            priority=q.priority,
            capability=_opt(q.capability),
            deserved=_opt(q.deserved),
            guarantee=ResourceVector(q.guarantee),
            reclaimable=q.reclaimable,
            open=q.state == "Open",
            allocated=ResourceVector(usage[q.name].allocated) if q.name in usage else ResourceVector(),
            created=int(q.created_at.timestamp()),
        )
        for q in queues_repo.list_queues(session=session)
    )
    clusters = tuple(cluster_snap(c, holding) for c in clusters_repo.list_clusters(session=session))
    return Snapshot(
        now=now,
        queues=queues,
        clusters=clusters,
        pending=tuple(pending_job(v, now) for v in bindings_repo.suspended(session=session)),
        running=tuple(running_job(v) for v in holding if v.cluster),
        placement=settings.placement,
        starvation_after=settings.starvation_after,
    )
