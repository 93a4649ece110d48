"""admit(snapshot): one dispatch cycle of global admission (DESIGN.md section 5.3).

Jobs are taken in progressive-filling order (order.py). Each must pass: its queue is an open leaf;
usage + request stays within realCap at the leaf and every ancestor; other queues' unmet guarantees
stay free; its gang fits ONE candidate cluster (placement.py). A job that fits nowhere may reclaim
jobs of queues above their deserved (reclaim.py) or, once starving, reserve capacity in its queue.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from vglobal.admission.explain import capability_reason, capacity_reason, fmt_row, guarantee_reason
from vglobal.admission.index import IntArray, ResourceIndex
from vglobal.admission.order import FairOrder
from vglobal.admission.placement import Clusters, FailureCache, PreparedGang, prepare_gang
from vglobal.admission.reclaim import ReclaimPlanner
from vglobal.admission.snapshot import (
    AdmissionResult,
    Admit,
    PendingJob,
    Reclaim,
    Snapshot,
    Wait,
)
from vglobal.admission.starvation import reservation
from vglobal.admission.status import queue_statuses
from vglobal.admission.topology import HyperNodeRows, place_with_topology, tier_text
from vglobal.admission.tree import QueueTree
from vglobal.model.resources import ResourceVector

# Reclaim plans per cycle (each searches every candidate cluster's victims); a cycle runs every
# second or so, so later plans only wait one cycle.
MAX_RECLAIM_PLANS = 64


@dataclass(slots=True)
class _Job:
    snap: PendingJob
    leaf: int
    req: list[int]
    dims: tuple[int, ...]
    gang: PreparedGang
    cand: IntArray


@dataclass(slots=True)
class _Leaf:
    jobs: list[_Job] = field(default_factory=list)
    next: int = 0
    # Starvation reservations of this queue: cluster -> per-node capacity its later jobs may not use.
    held: dict[int, IntArray] = field(default_factory=dict)
    held_for: dict[int, str] = field(default_factory=dict)
    planned: list[int] | None = None  # requests of jobs waiting on a planned reclaim
    reclaim_failed: bool = False
    # One reclaim plan and one starvation reservation per queue and cycle: the queue's later jobs
    # wait behind them (this also bounds the work of a cycle with a long starving backlog).
    reclaiming: str | None = None
    starving: str | None = None
    checked_at: int = -1  # admissions count when the next job last passed the capability check


def _names(vec: Mapping[str, int]) -> Iterable[str]:
    return vec.as_dict().keys() if isinstance(vec, ResourceVector) else vec.keys()


def _index(snapshot: Snapshot) -> ResourceIndex:
    names: set[str] = set()
    for q in snapshot.queues:
        for vec in (q.capability, q.deserved, q.guarantee, q.allocated):
            if vec is not None:
                names.update(_names(vec))
    for c in snapshot.clusters:
        for n in c.nodes:
            names.update(_names(n.free))
            names.update(_names(n.allocatable))
    for j in snapshot.pending:
        names.update(_names(j.request))
        for vec, _ in j.gang:
            names.update(_names(vec))
    # Running jobs' resources are left out: reclaim only needs the ones pending gangs ask for.
    return ResourceIndex(names)


class _Cycle:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snap = snapshot
        self.index = index = _index(snapshot)
        self.clusters = Clusters(snapshot.clusters, index, snapshot.placement)
        capacity = self.clusters.capacity()
        self.rows: dict[str, list[int]] = {}
        for job in snapshot.pending:
            self.rows[job.uid] = index.row(job.request)
        demand = ((job.queue, self.rows[job.uid]) for job in snapshot.pending)
        self.tree = QueueTree(snapshot.queues, index, index.vector(capacity.tolist()), demand)
        self.order = FairOrder(self.tree)
        self.failures = FailureCache()
        self._planner: ReclaimPlanner | None = None  # built on the first reclaim attempt
        self.decisions: dict[str, Admit | Wait] = {}
        self.reclaims: list[Reclaim] = []
        self.admitted: list[str] = []
        self.leaves: dict[int, _Leaf] = {}
        self.cap_rows = [[float(x) for x in rc.tolist()] for rc in self.tree.real_cap]
        self.des_rows = [[float(x) for x in d.tolist()] for d in self.tree.deserved]
        self.top_down = [p[::-1] for p in self.tree.path]
        self.guarded = any(any(g) for g in self.tree.guarantee)
        self.need = [[0] * index.size for _ in self.tree.names]
        self.need_sum = [[0] * index.size for _ in self.tree.names]
        if self.guarded:
            for i in reversed(self.tree.order[1:]):
                self._refresh_need(i)
        self._reasons: dict[tuple[object, ...], Wait] = {}
        self._hypernode_rows: dict[int, HyperNodeRows] = {}  # per cluster, built on first use
        self._whole: dict[tuple[bytes, object], list[int]] = {}
        self._charges = 0
        self._plans = 0
        # Per resource, the largest node: what "big" means when sorting a gang's shapes.
        biggest = self.clusters.max_alloc.max(axis=0) if len(self.clusters.names) else np.zeros(index.size)
        self._scale = np.maximum(np.asarray(biggest, dtype=np.int64).reshape(index.size), 1)

    # --- preparation -------------------------------------------------------------------------
    def prepare(self) -> None:
        tree = self.tree
        gangs: dict[object, PreparedGang] = {}
        for job in self.snap.pending:
            i = tree.idx.get(job.queue)
            if i is None:
                self._wait(job.uid, f"queue {job.queue} does not exist")
                continue
            if not tree.is_leaf[i]:
                kids = ", ".join(tree.names[c] for c in tree.children[i])
                self._wait(
                    job.uid,
                    f"queue {job.queue} is not a leaf queue (children: {kids}); jobs go only to leaf queues",
                )
                continue
            if not tree.open[i]:
                closed = next(q for q in tree.path[i] if not tree.snaps[q].open)
                self._wait(job.uid, f"queue {tree.names[closed]} is closed")
                continue
            # Equal gangs of different jobs share one prepared form (and failure-cache entries).
            gkey = tuple((tuple(self.index.row(vec)), n) for vec, n in job.gang)
            gang = gangs.get(gkey)
            if gang is None:
                gang = gangs[gkey] = prepare_gang(job.gang, self.index, self._scale)
            req = self.rows[job.uid]
            dims = tuple(r for r, v in enumerate(req) if v)
            self.leaves.setdefault(i, _Leaf()).jobs.append(
                _Job(job, i, req, dims, gang, self.clusters.candidates(job))
            )
        for i, leaf in sorted(self.leaves.items()):
            leaf.jobs.sort(key=lambda j: (-j.snap.priority, j.snap.created, j.snap.uid))
            self._advance(i, leaf)

    # --- checks ------------------------------------------------------------------------------
    def _wait(self, uid: str, reason: str) -> None:
        self.decisions[uid] = Wait(reason)

    def _capability(self, job: _Job) -> Wait | None:
        capacity = self.cap_rows[0]
        for r in job.dims:
            if job.req[r] > capacity[r]:
                return Wait(capacity_reason(self.index, r, capacity[r], job.req[r]))
        alloc = self.tree.alloc
        # Top-down, so a limit a leaf only inherits is reported at the queue that sets it.
        for q in self.top_down[job.leaf]:
            cap = self.cap_rows[q]
            a = alloc[q]
            for r in job.dims:
                if a[r] + job.req[r] > cap[r]:
                    key = ("cap", q, r, a[r], job.req[r])
                    got = self._reasons.get(key)
                    if got is None:
                        explicit = bool(self.tree.capability[q][r] <= cap[r])
                        got = Wait(
                            capability_reason(
                                self.tree.names[q], self.index, r, cap[r], a[r], job.req[r], explicit
                            )
                        )
                        self._reasons[key] = got
                    return got
        return None

    def _starving(self, job: _Job) -> bool:
        return self.snap.now - job.snap.waiting_since > self.snap.starvation_after

    def _may_reclaim(self, job: _Job, leaf: _Leaf) -> bool:
        if leaf.reclaim_failed or leaf.reclaiming is not None or not self.snap.running:
            return False
        if self._plans >= MAX_RECLAIM_PLANS:
            return False  # planning is the costly step: the rest waits for the next cycle
        if self.snap.now - job.snap.waiting_since < self.snap.reclaim_after:
            return False
        alloc = self.tree.alloc[job.leaf]
        des = self.des_rows[job.leaf]
        planned = leaf.planned or [0] * self.index.size
        return all(alloc[r] + planned[r] + job.req[r] <= des[r] for r in job.dims)

    def _advance(self, i: int, leaf: _Leaf) -> None:
        """Decide the jobs that must wait whatever happens next, then re-key the queue's next job."""
        while leaf.next < len(leaf.jobs):
            job = leaf.jobs[leaf.next]
            wait = self._capability(job)
            if wait is None:
                best = self.failures.lookup(job.cand, job.gang)
                if best is None:
                    leaf.checked_at = self._charges
                    break
                starving = self._starving(job)
                if (starving and leaf.starving is None) or self._may_reclaim(job, leaf):
                    leaf.checked_at = self._charges
                    break
                wait = self._behind(job, leaf, best) if starving else self._no_fit(job, best)
            self.decisions[job.snap.uid] = wait
            leaf.next += 1
        nxt = leaf.jobs[leaf.next].req if leaf.next < len(leaf.jobs) else None
        self.order.update(i, nxt)

    def _no_fit(self, job: _Job, best: str) -> Wait:
        key = ("fit", job.gang.key, best)
        got = self._reasons.get(key)
        if got is None:
            got = Wait(f"no cluster fits gang: {self.clusters.describe(job.gang)}; {best}")
            self._reasons[key] = got
        return got

    def _held_back(self, leaf: int) -> list[int]:
        """Unmet guarantees of queues outside this leaf's path: capacity this job may not use."""
        out = [0] * self.index.size
        tree = self.tree
        for q in tree.path[leaf]:
            siblings = self.need_sum[tree.parent[q]]
            mine = self.need[q]
            out = [o + s - m for o, s, m in zip(out, siblings, mine, strict=True)]
        return out

    def _refresh_need(self, q: int) -> None:
        """need(q) = max(pos(guarantee - allocated), sum of children's needs); keeps parents' sums."""
        g, a, kids = self.tree.guarantee[q], self.tree.alloc[q], self.need_sum[q]
        new = [max(gv - av, ks, 0) for gv, av, ks in zip(g, a, kids, strict=True)]
        old = self.need[q]
        p = self.tree.parent[q]
        self.need_sum[p] = [s + n - o for s, n, o in zip(self.need_sum[p], new, old, strict=True)]
        self.need[q] = new

    def _guarantees(self, job: _Job) -> Wait | None:
        held = self._held_back(job.leaf)
        if not any(held):
            return None
        free = self.clusters.free_total()
        for r in job.dims:
            need = job.req[r]
            if held[r] > 0 and free[r] - held[r] < need:
                return Wait(guarantee_reason(self.index, r, free[r], held[r], need))
        return None

    # --- the cycle ---------------------------------------------------------------------------
    def run(self) -> AdmissionResult:
        self.prepare()
        while True:
            i = self.order.pick()
            if i < 0:
                break
            leaf = self.leaves[i]
            job = leaf.jobs[leaf.next]
            leaf.next += 1
            self.decisions[job.snap.uid] = self._decide(job, leaf)
            self._advance(i, leaf)
        statuses = queue_statuses(self.tree, self.snap, self.decisions, self.index)
        return AdmissionResult(
            decisions=self.decisions,
            reclaims=tuple(self.reclaims),
            queues=statuses,
            admitted_order=tuple(self.admitted),
        )

    def _decide(self, job: _Job, leaf: _Leaf) -> Admit | Wait:
        if leaf.checked_at != self._charges:  # usage moved since the check in _advance
            wait = self._capability(job)
            if wait is not None:
                return wait
        if self.guarded:
            wait = self._guarantees(job)
            if wait is not None:
                return wait
        best = self.failures.lookup(job.cand, job.gang)
        if best is None:
            placed = self._place(job, leaf)
            if placed is not None:
                return placed
            if any(int(c) in leaf.held for c in job.cand.tolist()):
                reserved = self._reserved_reason(job, leaf)
                if reserved is not None:
                    return reserved
            best = self.clusters.best_effort(job.cand, job.gang)
            topo = job.snap.network_topology
            if topo is not None and topo[0] == "hard":
                # a topology failure says nothing about the same gang without topology: not cached
                best = f"no HyperNode of {tier_text(topo[1])} holds it in any candidate cluster ({best})"
            elif not any(int(c) in leaf.held for c in job.cand.tolist()):
                self.failures.record(job.cand, job.gang, best)
        if self._may_reclaim(job, leaf):
            planned = self._plan_reclaim(job, leaf)
            if planned is not None:
                leaf.reclaiming = job.snap.uid
                return planned
            leaf.reclaim_failed = True
        if self._starving(job):
            if leaf.starving is None:
                return self._reserve(job, leaf, best)
            return self._behind(job, leaf, best)
        return self._no_fit(job, best)

    def _behind(self, job: _Job, leaf: _Leaf, best: str) -> Wait:
        key = ("behind", job.gang.key, best, leaf.starving)
        got = self._reasons.get(key)
        if got is None:
            got = Wait(
                f"no cluster fits gang: {self.clusters.describe(job.gang)}; {best}; starving, but queued "
                f"behind the starving job {leaf.starving} of queue {self.tree.names[job.leaf]}"
            )
            self._reasons[key] = got
        return got

    def _place(self, job: _Job, leaf: _Leaf) -> Admit | None:
        topo = job.snap.network_topology
        if topo is not None:
            found = place_with_topology(
                self.clusters, self._hypernode_rows, job.cand, job.gang, leaf.held, topo[1]
            )
            if found is not None:
                c, placed_free = found
                self.clusters.commit(c, placed_free, job.gang.total)
                self._charge(job)
                self.admitted.append(job.snap.uid)
                return Admit(self.clusters.names[c])
            if topo[0] == "hard":
                return None
        for c in self.clusters.ranked(job.cand, job.gang):
            after = self.clusters.fit(c, job.gang, leaf.held.get(c))
            if after is not None:
                self.clusters.commit(c, after, job.gang.total)
                self._charge(job)
                self.admitted.append(job.snap.uid)
                return Admit(self.clusters.names[c])
        return None

    def _charge(self, job: _Job) -> None:
        self._charges += 1
        tree = self.tree
        for q in tree.path[job.leaf]:
            a = tree.alloc[q]
            for r in job.dims:
                a[r] += job.req[r]
            if self.guarded:
                self._refresh_need(q)
        root = tree.alloc[0]
        for r in job.dims:
            root[r] += job.req[r]

    def _reserved_reason(self, job: _Job, leaf: _Leaf) -> Wait | None:
        for c in self.clusters.ranked(job.cand, job.gang):
            if c in leaf.held and self.clusters.fit(c, job.gang) is not None:
                return Wait(
                    f"capacity on {self.clusters.names[c]} that fits gang {self.clusters.describe(job.gang)} "
                    f"is reserved for the starving job {leaf.held_for[c]} of queue "
                    f"{self.tree.names[job.leaf]}"
                )
        return None

    def _plan_reclaim(self, job: _Job, leaf: _Leaf) -> Wait | None:
        self._plans += 1
        cand = self._fits_allocatable(job)
        if self._planner is None:
            self._planner = ReclaimPlanner(self.snap.running, self.tree, self.clusters, self.index)
        plan = self._planner.plan(job.leaf, cand, job.gang)
        if plan is None:
            return None
        c, victims = plan
        cluster = self.clusters.names[c]
        queue = self.tree.names[job.leaf]
        for v in victims:
            vq = self.tree.names[v.queue]
            self.reclaims.append(
                Reclaim(
                    victim_uid=v.uid,
                    cluster=cluster,
                    for_uid=job.snap.uid,
                    reason=f"queue {vq} is above its deserved share; reclaimed for job {job.snap.uid} of "
                    f"queue {queue}, which is below its deserved share",
                )
            )
        planned = leaf.planned or [0] * self.index.size
        leaf.planned = [p + r for p, r in zip(planned, job.req, strict=True)]
        names = ", ".join(v.uid for v in victims)
        return Wait(
            f"queue {queue} is below its deserved share: reclaiming {len(victims)} job"
            f"{'s' if len(victims) != 1 else ''} on {cluster} ({names}); gang "
            f"{self.clusters.describe(job.gang)} is admitted once they stop"
        )

    def _fits_allocatable(self, job: _Job) -> list[int]:
        key = (job.cand.tobytes(), job.gang.key)
        got = self._whole.get(key)
        if got is None:
            got = self._whole[key] = self.clusters.fits_allocatable(job.cand, job.gang)
        return got

    def _reserve(self, job: _Job, leaf: _Leaf, best: str) -> Wait:
        head = f"no cluster fits gang: {self.clusters.describe(job.gang)}; {best}"
        found = reservation(self.clusters, self._fits_allocatable(job), job.gang)
        if found is None:
            return Wait(f"{head}; no candidate cluster could hold it even when empty")
        c, held = found
        leaf.held[c] = held
        leaf.held_for[c] = job.snap.uid
        leaf.starving = job.snap.uid
        waited = int(self.snap.now - job.snap.waiting_since)
        return Wait(
            f"{head}; waiting {waited}s (over {int(self.snap.starvation_after)}s): capacity "
            f"{fmt_row(self.index, job.gang.total.tolist())} reserved on {self.clusters.names[c]} "
            f"against lower-priority jobs of queue {self.tree.names[job.leaf]}"
        )


def admit(snapshot: Snapshot) -> AdmissionResult:
    """Decide every pending job of the snapshot: Admit(cluster) or Wait(reason), plus reclaims."""
    # A cycle allocates many small objects while the snapshot holds millions: the cyclic collector
    # would rescan the snapshot again and again (0.5 s+ at 100k jobs). Nothing here forms cycles.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _Cycle(snapshot).run()
    finally:
        if paused:
            gc.enable()
