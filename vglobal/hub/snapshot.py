"""Reading one admission Snapshot out of Postgres (inside the dispatch cycle's transaction).

A job's requests, gang and placement never change after submit, so the dispatcher keeps them in a
cache between cycles and reads only what changes (binding phase, cluster, wait time) for all jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.bindings import LiveBinding
from vglobal.store.repo.jobs import JobStatic
from vglobal.store.rows import ClusterRow

NOT_YET_PLACED = (BindingPhase.Dispatched.value, BindingPhase.Bound.value)
SUSPENDED = BindingPhase.Suspended.value
Gang = tuple[tuple[ResourceVector, int], ...]


@dataclass(frozen=True)
class JobFacts:
    """A job's immutable admission inputs, converted once."""

    uid: str
    namespace: str
    name: str
    queue: str
    priority: int
    created: float
    request: ResourceVector
    gang: Gang
    pod_requests: Mapping[str, ResourceVector]
    allowed: frozenset[str] | None
    selector: Mapping[str, str]
    topology: tuple[str, int | None] | None

    @classmethod
    def of(cls, s: JobStatic, shared: Shared) -> JobFacts:
        allowed = s.placement.get("clusters")
        topo = s.placement.get("topology")
        return cls(
            uid=s.uid,
            namespace=s.namespace,
            name=s.name,
            queue=s.queue,
            priority=s.priority,
            created=s.created_at.timestamp(),
            request=shared.vector(ResourceVector(s.request)),
            gang=shared.gang(tuple((shared.vector(ResourceVector(u)), int(n)) for u, n in s.gang)),
            pod_requests={t: ResourceVector(u) for t, u in s.pod_requests.items()},
            allowed=frozenset(allowed) if allowed is not None else None,
            selector=s.placement.get("selector") or {},
            topology=(topo["mode"], topo.get("tier")) if topo else None,
        )


@dataclass
class Shared:
    """One object per distinct request vector and gang: jobs repeat a few shapes, and admission
    tells equal inputs apart by identity first (cheaper than comparing values)."""

    vectors: dict[ResourceVector, ResourceVector] = field(default_factory=dict)
    gangs: dict[Gang, Gang] = field(default_factory=dict)

    def vector(self, v: ResourceVector) -> ResourceVector:
        return self.vectors.setdefault(v, v)

    def gang(self, g: Gang) -> Gang:
        return self.gangs.setdefault(g, g)


@dataclass
class SnapshotCache:
    jobs: dict[str, JobFacts] = field(default_factory=dict)
    # A pending job's snapshot entry, reused while its wait start and exclusions are unchanged.
    pending: dict[str, tuple[tuple[Any, frozenset[str]], PendingJob]] = field(default_factory=dict)
    # The wait reason last written per job and when (monotonic seconds), so unchanged reasons are
    # not written again and reasons whose figures merely moved are refreshed only now and then.
    reasons: dict[str, tuple[str, float]] = field(default_factory=dict)
    shared: Shared = field(default_factory=Shared)
    # An admitted job's snapshot entry, reused while its cluster, admission and placements hold.
    holding: dict[str, tuple[tuple[Any, ...], RunningJob]] = field(default_factory=dict)

    def pending_job(self, f: JobFacts, b: LiveBinding, now: float) -> PendingJob:
        excluded = (
            frozenset(c for c, t in b.excluded_clusters.items() if float(t) > now)
            if b.excluded_clusters
            else frozenset()
        )
        key = (b.waiting_since, excluded)
        hit = self.pending.get(f.uid)
        if hit is not None and hit[0] == key:
            return hit[1]
        job = PendingJob(
            uid=f.uid,
            name=f.name,
            namespace=f.namespace,
            queue=f.queue,
            priority=f.priority,
            created=f.created,
            waiting_since=b.waiting_since,
            request=f.request,
            gang=f.gang,
            allowed_clusters=f.allowed,
            cluster_selector=f.selector,
            excluded_clusters=excluded,
            network_topology=f.topology,
        )
        self.pending[f.uid] = (key, job)
        return job

    def running_job(self, f: JobFacts, b: LiveBinding) -> RunningJob:
        assert b.cluster is not None
        key = (b.cluster, b.dispatched_at, b.placements)
        hit = self.holding.get(f.uid)
        if hit is not None and hit[0] == key:
            return hit[1]
        job = RunningJob(
            uid=f.uid,
            queue=f.queue,
            cluster=b.cluster,
            priority=f.priority,
            created=f.created,
            request=f.request,
            placements=placements_of(f, b.placements),
            running_since=b.dispatched_at,
        )
        self.holding[f.uid] = (key, job)
        return job

    def facts(self, live: Sequence[LiveBinding], *, session: Session) -> dict[str, JobFacts]:
        missing = [b.job_uid for b in live if b.job_uid not in self.jobs]
        for s in jobs_repo.statics(missing, session=session):
            self.jobs[s.uid] = JobFacts.of(s, self.shared)
        # Forget finished and deleted jobs, and admitted jobs' pending entries.
        if len(self.jobs) > len(live):  # uids in `live` are unique
            wanted = {b.job_uid for b in live}
            self.jobs = {u: f for u, f in self.jobs.items() if u in wanted}
            self.holding = {u: r for u, r in self.holding.items() if u in wanted}
            if len(self.shared.vectors) + len(self.shared.gangs) > 2 * len(self.jobs) + 1000:
                self.shared = Shared()  # mostly shapes of jobs that are gone; sharing only saves work
        waiting = {b.job_uid for b in live if b.phase == SUSPENDED}
        if len(self.pending) > len(waiting):
            self.pending = {u: p for u, p in self.pending.items() if u in waiting}
        if len(self.reasons) > len(waiting):
            self.reasons = {u: r for u, r in self.reasons.items() if u in waiting}
        return self.jobs


def pod_task(pod: str, job_name: str) -> str:
    """`<job>-<task>-<index>` → task."""
    rest = pod[len(job_name) + 1 :] if pod.startswith(job_name + "-") else pod
    return rest.rsplit("-", 1)[0]


def placements_of(facts: JobFacts, placements: list[dict[str, Any]] | None) -> Mapping[str, ResourceVector]:
    per_node: dict[str, ResourceVector] = {}
    for p in placements or ():
        node = p.get("node")
        if not node or p.get("phase") in ("Succeeded", "Failed"):
            continue
        req = facts.pod_requests.get(pod_task(p["pod"], facts.name), ResourceVector())
        per_node[node] = per_node.get(node, ResourceVector()) + req
    return per_node


def cluster_snap(row: ClusterRow, unplaced: Sequence[Gang]) -> ClusterSnap:
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
        name=row.name,
        labels=row.labels,
        nodes=nodes,
        schedulable=schedulable,
        hypernodes=hypernodes,
        unplaced=tuple(unplaced),
    )


def _opt(units: dict[str, Any] | None) -> ResourceVector | None:
    return None if units is None else ResourceVector(units)


def build_snapshot(settings: HubSettings, cache: SnapshotCache, *, session: Session) -> Snapshot:
    now = clusters_repo.db_now(session=session)
    live = bindings_repo.live(session=session)
    facts = cache.facts(live, session=session)
    pending: list[PendingJob] = []
    running: list[RunningJob] = []
    unplaced: dict[str, list[Gang]] = {}
    # Usage per queue, counted per (queue, request): requests are shared objects, so this adds up
    # a few distinct vectors instead of one per admitted job.
    holding: dict[tuple[str, int], tuple[ResourceVector, int]] = {}
    for b in live:
        f = facts.get(b.job_uid)
        if f is None:
            continue  # deleted between the two reads
        if b.phase == SUSPENDED:
            pending.append(cache.pending_job(f, b, now))
            continue
        key = (f.queue, id(f.request))
        got = holding.get(key)
        holding[key] = (f.request, 1 if got is None else got[1] + 1)
        if b.cluster:
            if b.phase in NOT_YET_PLACED:
                unplaced.setdefault(b.cluster, []).append(f.gang)
            running.append(cache.running_job(f, b))
    per_queue: dict[str, dict[str, int]] = {}
    for (queue, _), (request, n) in holding.items():
        acc = per_queue.setdefault(queue, {})
        for r, v in request.items():
            acc[r] = acc.get(r, 0) + v * n
    allocated = {q: ResourceVector(acc) for q, acc in per_queue.items()}
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
            allocated=allocated.get(q.name, ResourceVector()),
            created=int(q.created_at.timestamp()),
        )
        for q in queues_repo.list_queues(session=session)
    )
    clusters = tuple(
        cluster_snap(c, unplaced.get(c.name, ())) for c in clusters_repo.list_clusters(session=session)
    )
    return Snapshot(
        now=now,
        queues=queues,
        clusters=clusters,
        pending=tuple(pending),
        running=tuple(running),
        placement=settings.placement,
        starvation_after=settings.starvation_after,
        reclaim_after=settings.reclaim_after,
        queue_lookback=settings.queue_lookback,
        reclaim_min_runtime=settings.reclaim_min_runtime,
    )
