"""Reading one admission Snapshot out of Postgres (inside the dispatch cycle's transaction).

A job's requests, gang and placement never change after submit, so the dispatcher keeps them in a
cache between cycles. Of the bindings (phase, cluster, wait time) and the clusters it keeps the
last read too, and each cycle reads only the rows written since (``SnapshotCache.refresh``,
``ClusterCache.read``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
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
from vglobal.store.repo.bindings import LiveBinding, Written
from vglobal.store.repo.jobs import JobStatic
from vglobal.store.rows import ClusterRow

LIVE = frozenset(bindings_repo.LIVE_PHASES)
NOT_YET_PLACED = (BindingPhase.Dispatched.value, BindingPhase.Bound.value)
SUSPENDED = BindingPhase.Suspended.value
Gang = tuple[tuple[ResourceVector, int], ...]

# The kept bindings are replaced by a full read this often (seconds). The change reads miss
# nothing, so this only bounds what a fault in them could cost; a full read takes about 1 s at
# 100k jobs.
FULL_READ_INTERVAL = 300.0


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


def _usable(node: Mapping[str, Any]) -> bool:
    return not node.get("unschedulable") and not any(
        t.get("effect") in ("NoSchedule", "NoExecute") for t in node.get("taints", [])
    )


_BY_NAME = attrgetter("name")


@dataclass
class ClusterCache:
    """Cluster rows as last read, and each node's snapshot entry, reused while its reported
    inventory and free capacity hold: comparing the reported dicts is far cheaper than converting
    them again."""

    # name -> ((row version, inventory digest), row)
    rows: dict[str, tuple[tuple[str, str], ClusterRow]] = field(default_factory=dict)
    nodes: dict[tuple[str, str], tuple[dict[str, Any], Any, NodeSnap]] = field(default_factory=dict)

    def read(self, *, session: Session) -> list[ClusterRow]:
        """Every cluster row, read again only where it was written since, and its node inventory
        only where that changed (agents report every few seconds; the inventory rarely moves)."""
        versions = clusters_repo.versions(session=session)
        kept = self.rows
        stale = [name for name, v in versions.items() if name not in kept or kept[name][0] != v]
        same = [n for n in stale if n in kept and kept[n][0][1] == versions[n][1]]
        if same:
            for row in clusters_repo.list_clusters(session=session, names=same, with_nodes=False):
                kept[row.name] = (versions[row.name], replace(row, nodes=kept[row.name][1].nodes))
        fresh = [n for n in stale if n not in same]
        if fresh:
            for row in clusters_repo.list_clusters(session=session, names=fresh):
                kept[row.name] = (versions[row.name], row)
        self.rows = {name: kept[name] for name in versions if name in kept}
        rows = [entry[1] for entry in self.rows.values()]
        if len(self.nodes) > sum(len(c.nodes) for c in rows):  # nodes or clusters went away
            wanted = {(c.name, n["name"]) for c in rows for n in c.nodes}
            self.nodes = {k: v for k, v in self.nodes.items() if k in wanted}
        return rows

    def node(self, cluster: str, node: dict[str, Any], free: dict[str, dict[str, int]]) -> NodeSnap:
        name = node["name"]
        left = free.get(name)
        key = (cluster, name)
        hit = self.nodes.get(key)
        if hit is not None and hit[0] == node and hit[1] == left:
            return hit[2]
        snap = NodeSnap(
            name=name,
            free=ResourceVector(left or {}) if _usable(node) else ResourceVector(),
            allocatable=ResourceVector(node.get("allocatable", {})),
            labels=node.get("labels", {}),
        )
        self.nodes[key] = (node, left, snap)
        return snap


@dataclass
class SnapshotCache:
    """What the dispatcher keeps between cycles: every unfinished binding as last read, and the
    snapshot entries built from them, updated only for the bindings written since."""

    jobs: dict[str, JobFacts] = field(default_factory=dict)  # per unfinished job
    # The wait reason last written per job and when (monotonic seconds), so unchanged reasons are
    # not written again and reasons whose figures merely moved are refreshed only now and then.
    reasons: dict[str, tuple[str, float]] = field(default_factory=dict)
    shared: Shared = field(default_factory=Shared)
    live: dict[str, LiveBinding] = field(default_factory=dict)
    horizon: int | None = None  # of the last read; None: nothing read yet
    # Transactions of this hub's own binding writes since that read, whose rows it applied as it
    # wrote them (see wrote()): the next read skips rows still at those versions.
    own_writes: set[int] = field(default_factory=set)
    full_read_at: float = 0.0  # monotonic seconds
    # Built from `live` (and kept in step with it):
    pending: dict[str, PendingJob] = field(default_factory=dict)  # Suspended bindings
    running: dict[str, RunningJob] = field(default_factory=dict)  # admitted to a cluster
    unplaced: dict[str, dict[str, Gang]] = field(default_factory=dict)  # cluster -> uid -> gang
    held: dict[str, tuple[str, ResourceVector]] = field(default_factory=dict)  # uid -> queue, request
    # Usage of the admitted jobs per queue, and its vector (dropped when the usage moves).
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    usage_vec: dict[str, ResourceVector] = field(default_factory=dict)
    expiring: set[str] = field(default_factory=set)  # pending jobs whose cluster exclusions run out
    clusters: ClusterCache = field(default_factory=ClusterCache)
    # Per queue, the figures stored with it when the snapshot was read.
    queue_status: dict[str, dict[str, Any]] = field(default_factory=dict)

    def refresh(self, now: float, *, session: Session) -> None:
        """Bring the kept bindings up to date: the rows written since the last read, or all of them
        when nothing is kept, the kept ones are old, or a row was deleted."""
        horizon = bindings_repo.read_horizon(session=session)
        mono = time.monotonic()
        if self.horizon is not None and mono - self.full_read_at < FULL_READ_INTERVAL:
            skip = sorted(self.own_writes)
            rows, count = bindings_repo.changed_since(self.horizon, session=session, skip=skip)
            live = self.live
            added = sum(1 for b in rows if b.phase in LIVE and b.job_uid not in live)
            removed = sum(1 for b in rows if b.phase not in LIVE and b.job_uid in live)
            if len(live) + added - removed == count:  # else a deleted job's binding is still kept
                self._apply(rows, now, session=session)
                self.horizon = horizon
                self.own_writes = set()
                return
        rows = bindings_repo.live(session=session)
        self._forget()
        self._apply(rows, now, session=session)
        self.horizon = horizon
        self.own_writes = set()
        self.full_read_at = mono

    def wrote(self, written: Written, now: float) -> None:
        """Bindings this hub wrote, as the write left them (so also what others changed in them
        before it), once its transaction committed, which wrote no other bindings. The next read
        skips their versions: in a busy cycle most of what it would otherwise read again."""
        if any(b.job_uid not in self.jobs for b in written.rows):
            return  # a job this cache has not read yet: the next read finds the rows
        self._apply_known(written.rows, now)
        self.own_writes |= written.xids

    def knows(self, written: Written) -> None:
        """Bindings this hub wrote in a transaction that changed nothing admission reads of them
        (their wait reasons) and wrote no other bindings, once it committed, whether before or
        after the last read. If every row is as this cache holds it, the next read skips their
        versions. A row that is not was changed by another writer around the write (before it,
        after the last read, or after it, before the read): the next read fetches it again."""
        live = self.live
        if all(live.get(b.job_uid) == b for b in written.rows):
            self.own_writes |= written.xids

    def _forget(self) -> None:
        """Everything built from bindings (a job's facts never change: they stay)."""
        self.live, self.pending, self.running, self.unplaced = {}, {}, {}, {}
        self.held, self.usage, self.usage_vec, self.expiring = {}, {}, {}, set()

    def _apply(self, rows: Sequence[LiveBinding], now: float, *, session: Session) -> None:
        missing = [b.job_uid for b in rows if b.phase in LIVE and b.job_uid not in self.jobs]
        statics = jobs_repo.statics(missing, session=session)  # the last I/O: the rest cannot fail
        for st in statics:
            self.jobs[st.uid] = JobFacts.of(st, self.shared)
        self._apply_known(rows, now)

    def _apply_known(self, rows: Sequence[LiveBinding], now: float) -> None:
        live = self.live
        for b in rows:
            if live.get(b.job_uid) == b:
                continue  # written, but not in anything admission reads (a wait reason, say)
            self._drop(b.job_uid)
            if b.phase in LIVE:
                live[b.job_uid] = b
                f = self.jobs.get(b.job_uid)
                if f is not None:  # None: the job was deleted after the bindings were read
                    self._add(f, b, now)
            else:
                self.jobs.pop(b.job_uid, None)
                self.reasons.pop(b.job_uid, None)
        for uid in list(self.expiring):  # exclusions end with time, not with a write
            job = self.pending[uid] = self._pending_job(self.jobs[uid], self.live[uid], now)
            if not job.excluded_clusters:
                self.expiring.discard(uid)
        if len(self.jobs) > len(self.live):  # deleted between reads, or kept over a full read
            self.jobs = {u: f for u, f in self.jobs.items() if u in self.live}
            self.reasons = {u: r for u, r in self.reasons.items() if u in self.pending}
        if len(self.shared.vectors) + len(self.shared.gangs) > 2 * len(self.jobs) + 1000:
            self.shared = Shared()  # mostly shapes of jobs that are gone; sharing only saves work

    def _drop(self, uid: str) -> None:
        self.live.pop(uid, None)
        if self.pending.pop(uid, None) is not None:
            self.expiring.discard(uid)
            return
        got = self.held.pop(uid, None)
        if got is None:
            return
        queue, request = got
        self._use(queue, request, -1)
        job = self.running.pop(uid, None)
        if job is not None and job.cluster in self.unplaced:
            self.unplaced[job.cluster].pop(uid, None)

    def _add(self, f: JobFacts, b: LiveBinding, now: float) -> None:
        uid = f.uid
        if b.phase == SUSPENDED:
            job = self.pending[uid] = self._pending_job(f, b, now)
            if job.excluded_clusters:
                self.expiring.add(uid)
            return
        self.reasons.pop(uid, None)
        self.held[uid] = (f.queue, f.request)
        self._use(f.queue, f.request, 1)
        if b.cluster:
            if b.phase in NOT_YET_PLACED:
                self.unplaced.setdefault(b.cluster, {})[uid] = f.gang
            self.running[uid] = RunningJob(
                uid=uid,
                queue=f.queue,
                cluster=b.cluster,
                priority=f.priority,
                created=f.created,
                request=f.request,
                placements=placements_of(f, b.placements),
                running_since=b.dispatched_at,
            )

    def _pending_job(self, f: JobFacts, b: LiveBinding, now: float) -> PendingJob:
        excluded = (
            frozenset(c for c, t in b.excluded_clusters.items() if float(t) > now)
            if b.excluded_clusters
            else frozenset()
        )
        return PendingJob(
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

    def _use(self, queue: str, request: ResourceVector, sign: int) -> None:
        acc = self.usage.get(queue)
        if acc is None:
            acc = self.usage[queue] = {}
        for r, v in request.items():
            acc[r] = acc.get(r, 0) + sign * v
        self.usage_vec.pop(queue, None)

    def allocated(self, queue: str) -> ResourceVector:
        got = self.usage_vec.get(queue)
        if got is None:
            got = self.usage_vec[queue] = ResourceVector(self.usage.get(queue, {}))
        return got


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


def cluster_snap(row: ClusterRow, unplaced: Sequence[Gang], cache: ClusterCache) -> ClusterSnap:
    schedulable = row.effective_state == "Ready"
    snaps = tuple(sorted((cache.node(row.name, n, row.free) for n in row.nodes), key=_BY_NAME))
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
        nodes=snaps,
        schedulable=schedulable,
        hypernodes=hypernodes,
        unplaced=tuple(unplaced),
    )


def _opt(units: dict[str, Any] | None) -> ResourceVector | None:
    return None if units is None else ResourceVector(units)


def build_snapshot(settings: HubSettings, cache: SnapshotCache, *, session: Session) -> Snapshot:
    now = clusters_repo.db_now(session=session)
    cache.refresh(now, session=session)
    queue_rows = queues_repo.list_queues(session=session)
    cache.queue_status = {q.name: q.status for q in queue_rows}
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
            allocated=cache.allocated(q.name),
            created=int(q.created_at.timestamp()),
        )
        for q in queue_rows
    )
    clusters = tuple(
        cluster_snap(c, tuple(cache.unplaced.get(c.name, {}).values()), cache.clusters)
        for c in cache.clusters.read(session=session)
    )
    return Snapshot(
        now=now,
        queues=queues,
        clusters=clusters,
        pending=tuple(cache.pending.values()),
        running=tuple(cache.running.values()),
        placement=settings.placement,
        starvation_after=settings.starvation_after,
        reclaim_after=settings.reclaim_after,
        queue_lookback=settings.queue_lookback,
        max_admissions=settings.max_admissions_per_cycle,
        reclaim_min_runtime=settings.reclaim_min_runtime,
    )
