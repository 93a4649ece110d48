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
from itertools import repeat
from operator import attrgetter

import numpy as np

from vglobal.admission.explain import capability_reason, capacity_reason, fmt_row, guarantee_reason
from vglobal.admission.index import ResourceIndex
from vglobal.admission.order import FairOrder
from vglobal.admission.placement import (
    Candidates,
    Clusters,
    FailureCache,
    Placement,
    PreparedGang,
    prepare_gang,
)
from vglobal.admission.reclaim import ReclaimPlanner
from vglobal.admission.snapshot import (
    AdmissionResult,
    Admit,
    Gang,
    PendingJob,
    Reclaim,
    Snapshot,
    Wait,
)
from vglobal.admission.starvation import Hold, reservation
from vglobal.admission.status import queue_statuses
from vglobal.admission.topology import HyperNodeRows, place_with_topology, tier_text
from vglobal.admission.tree import QueueTree
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import ResourceVector

# Reclaim plans per cycle (each searches the victims of a few candidate clusters); a cycle runs
# every second or so, so later plans only wait one cycle.
MAX_RECLAIM_PLANS = 16
# A queue's jobs made admission's form at a time once the cycle is past its head (_Cycle._make).
_MAKE_AHEAD = 64


@dataclass(slots=True)
class _Job:
    snap: PendingJob
    leaf: int
    req: list[int]  # shared by every job with the same request
    rid: int  # names that request within the cycle
    dims: tuple[int, ...]
    gang: PreparedGang
    cand: Candidates


@dataclass(slots=True)
class _Leaf:
    index: int  # the queue's place in the tree
    ordered: list[PendingJob] = field(default_factory=list)  # the jobs looked at, in queue order
    # The first of them in admission's form, made as the cycle reaches them: a burst cycle stops at
    # its admission budget or at each queue's head, long before most of them.
    jobs: list[_Job] = field(default_factory=list)
    next: int = 0
    # Starvation reservations of this queue: cluster -> per-node capacity its later jobs may not use.
    held: dict[int, Hold] = field(default_factory=dict)
    held_for: dict[int, str] = field(default_factory=dict)
    planned: list[int] | None = None  # requests of jobs waiting on a planned reclaim
    reclaim_failed: bool = False
    # One reclaim plan and one starvation reservation per queue and cycle: the queue's later jobs
    # wait behind them (this also bounds the work of a cycle with a long starving backlog).
    reclaiming: str | None = None
    starving: str | None = None
    checked_at: int = -1  # admissions count when the next job last passed the capability check
    # Requests (by rid) that failed a capability check: usage only grows within a cycle, so the
    # queue's later jobs with the same request fail it too.
    over_cap: dict[int, Wait] = field(default_factory=dict)
    # Requests (by rid) that passed it, with the admissions count then: until the next admission
    # the same request passes again.
    cap_ok: dict[int, int] = field(default_factory=dict)


def _names(vec: Mapping[str, int]) -> Iterable[str]:
    return vec.keys()


def _index(snapshot: Snapshot, requests: Iterable[ResourceVector], gangs: Iterable[Gang]) -> ResourceIndex:
    names: set[str] = set()
    for q in snapshot.queues:
        for vec in (q.capability, q.deserved, q.guarantee, q.allocated):
            if vec is not None:
                names.update(_names(vec))
    for c in snapshot.clusters:
        for n in c.nodes:
            names.update(_names(n.free))
            names.update(_names(n.allocatable))
        for gang in c.unplaced:
            for vec, _ in gang:
                names.update(_names(vec))
    for vec in requests:
        names.update(_names(vec))
    for gang in gangs:
        for vec, _ in gang:
            names.update(_names(vec))
    # Running jobs' resources are left out: reclaim only needs the ones pending gangs ask for.
    return ResourceIndex(names)


# A queue's jobs in order: priority (highest first), then creation, then uid. Three stable sorts
# on C-level keys (reverse keeps equal items in order) beat one sort on a Python tuple.
_BY_UID = attrgetter("uid")
_BY_CREATED = attrgetter("created")
_BY_PRIORITY = attrgetter("priority")


def _queue_order(jobs: Iterable[PendingJob]) -> list[PendingJob]:
    out = sorted(jobs, key=_BY_UID)
    out.sort(key=_BY_CREATED)
    out.sort(key=_BY_PRIORITY, reverse=True)
    return out


class _Cycle:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snap = snapshot
        # Passes over all jobs go in snapshot order (memory order): sorted, they would miss caches.
        self.jobs = snapshot.pending
        # Jobs repeat a handful of requests and gangs: each distinct one is converted once.
        # The hub shares one object per distinct value, so identity (a C-level int key) answers
        # almost every lookup before the vector's Python-level hash and equality are needed.
        rid_of: dict[ResourceVector, int] = {}
        gid_of: dict[Gang, int] = {}
        rid_by_id: dict[int, int] = {}
        gid_by_id: dict[int, int] = {}
        counts: dict[tuple[str, int], int] = {}  # jobs per (queue, request): the queues' demand
        self.by_queue: dict[str, list[PendingJob]] = {}
        self.rid_by_id, self.gid_by_id = rid_by_id, gid_by_id
        by_queue = self.by_queue
        for job in self.jobs:
            vec, gang, queue = job.request, job.gang, job.queue
            rid = rid_by_id.get(id(vec))
            if rid is None:
                rid = rid_by_id[id(vec)] = rid_of.setdefault(vec, len(rid_of))
            if id(gang) not in gid_by_id:
                gid_by_id[id(gang)] = gid_of.setdefault(gang, len(gid_of))
            key = (queue, rid)
            counts[key] = counts.get(key, 0) + 1
            got = by_queue.get(queue)
            if got is None:
                got = by_queue[queue] = []
            got.append(job)
        self.index = index = _index(snapshot, rid_of, gid_of)
        self.req_rows = [index.row(vec) for vec in rid_of]
        self.req_dims = [tuple(r for r, v in enumerate(row) if v) for row in self.req_rows]
        self.gang_specs = list(gid_of)
        self.clusters = Clusters(snapshot.clusters, index, snapshot.placement)
        capacity = self.clusters.capacity()
        demand: dict[str, list[int]] = {}
        for (queue, rid), n in counts.items():
            row = demand.setdefault(queue, [0] * index.size)
            for r in self.req_dims[rid]:
                row[r] += n * self.req_rows[rid][r]
        self.tree = QueueTree(snapshot.queues, index, index.vector(capacity.tolist()), demand.items())
        self.order = FairOrder(self.tree)
        self.failures = FailureCache()
        self._planner: ReclaimPlanner | None = None  # built on the first reclaim attempt
        self.decisions: dict[str, Admit | Wait] = {}
        self.reclaims: list[Reclaim] = []
        self.admitted: list[str] = []
        self.leaves: dict[int, _Leaf] = {}
        self.cap_rows = [[float(x) for x in rc.tolist()] for rc in self.tree.real_cap]
        self.des_rows = [[float(x) for x in d.tolist()] for d in self.tree.deserved]
        self._checks: dict[int, list[tuple[int, int, float]]] = {}
        self.guarded = any(any(g) for g in self.tree.guarantee)
        self.need = [[0] * index.size for _ in self.tree.names]
        self.need_sum = [[0] * index.size for _ in self.tree.names]
        # Queues with a guarantee at or below them: the only ones whose need can be non-zero.
        self.guards = [False] * len(self.tree.names)
        self._need_version = 0
        if self.guarded:
            for i in reversed(self.tree.order[1:]):
                if any(self.tree.guarantee[i]) or any(self.guards[k] for k in self.tree.children[i]):
                    self.guards[i] = True
                    self._refresh_need(i)
        self._held: dict[int, tuple[int, list[int]]] = {}
        self._reasons: dict[tuple[object, ...], Wait] = {}
        self._hypernode_rows: dict[int, HyperNodeRows] = {}  # per cluster, built on first use
        self._whole: dict[tuple[bytes, str], list[int]] = {}
        self._charges = 0
        self._plans = 0
        self.queue_jobs = [0] * len(self.tree.names)  # pending jobs per queue (leaf or not)
        self.queue_admitted = [0] * len(self.tree.names)
        # Per resource, the largest node: what "big" means when sorting a gang's shapes.
        biggest = self.clusters.max_alloc.max(axis=0) if len(self.clusters.names) else np.zeros(index.size)
        self._scale = np.maximum(np.asarray(biggest, dtype=np.int64).reshape(index.size), 1)
        self._gangs: dict[object, PreparedGang] = {}
        self._by_spec: dict[Gang, PreparedGang] = {}
        self.clusters.take_unplaced(self._prepared)

    def _prepared(self, spec: Gang) -> PreparedGang:
        """The gang's prepared form; equal gangs share one (and its failure-cache entries)."""
        got = self._by_spec.get(spec)  # the hub shares gang objects: mostly an identity hit
        if got is None:
            prepared = prepare_gang(spec, self.index, self._scale)
            got = self._by_spec[spec] = self._gangs.setdefault(prepared.key, prepared)
        return got

    # --- preparation -------------------------------------------------------------------------
    def prepare(self) -> None:
        tree = self.tree
        self._prepared_gangs = [self._prepared(spec) for spec in self.gang_specs]
        self._anywhere = self.clusters.candidates_anywhere()
        lookback = self.snap.queue_lookback
        for queue, jobs in self.by_queue.items():
            i = tree.idx.get(queue, -1)
            if i >= 0:
                self.queue_jobs[i] += len(jobs)
            leaf = self._leaf_for(queue)
            if leaf is None:
                self._wait_all(jobs, self._not_a_leaf(queue))
                continue
            ordered = _queue_order(jobs)
            if lookback and len(ordered) > lookback:
                self._wait_all(
                    ordered[lookback:],
                    Wait(
                        WaitKind.QueueLookback,
                        f"waiting its turn in queue {queue}: only the first {lookback} of its "
                        f"{len(ordered)} pending jobs are looked at each cycle (--queue-lookback)"
                    ),
                )
                del ordered[lookback:]
            leaf.ordered = ordered
        for i, leaf in sorted(self.leaves.items()):
            self._advance(i, leaf)

    def _make(self, leaf: _Leaf) -> None:
        """The leaf's next jobs in admission's form (see _Leaf.jobs), a few at a time: in a busy
        cycle most queues' jobs all wait, and are reached one after the other."""
        start = len(leaf.jobs)
        rid_by_id, gid_by_id, gangs = self.rid_by_id, self.gid_by_id, self._prepared_gangs
        req_rows, req_dims, anywhere, i = self.req_rows, self.req_dims, self._anywhere, leaf.index
        append = leaf.jobs.append
        for job in leaf.ordered[start : start + (_MAKE_AHEAD if start else 1)]:
            rid = rid_by_id[id(job.request)]
            if job.allowed_clusters is None and not job.cluster_selector and not job.excluded_clusters:
                cand = anywhere  # the common case, inlined
            else:
                cand = self.clusters.candidates(job)
            append(_Job(job, i, req_rows[rid], rid, req_dims[rid], gangs[gid_by_id[id(job.gang)]], cand))

    def _wait_all(self, jobs: Iterable[PendingJob], wait: Wait) -> None:
        self.decisions.update(zip([j.uid for j in jobs], repeat(wait)))

    def _leaf_for(self, queue: str) -> _Leaf | None:
        """The queue's _Leaf when it takes jobs now, else None (see _not_a_leaf for why not)."""
        tree = self.tree
        i = tree.idx.get(queue)
        if i is None or not tree.is_leaf[i] or not tree.open[i]:
            return None
        got = self.leaves.get(i)
        if got is None:
            got = self.leaves[i] = _Leaf(i)
        return got

    def _not_a_leaf(self, queue: str) -> Wait:
        tree = self.tree
        i = tree.idx.get(queue)
        if i is None:
            return Wait(WaitKind.QueueMissing, f"queue {queue} does not exist")
        if not tree.is_leaf[i]:
            kids = ", ".join(tree.names[c] for c in tree.children[i])
            return Wait(
                WaitKind.QueueNotLeaf,
                f"queue {queue} is not a leaf queue (children: {kids}); jobs go only to leaf queues",
            )
        closed = next(q for q in tree.path[i] if not tree.snaps[q].open)
        return Wait(WaitKind.QueueClosed, f"queue {tree.names[closed]} is closed")

    def _limits(self, leaf: int) -> list[tuple[int, int, float]]:
        """(queue, resource, realCap) to check for a leaf's jobs, top-down below root.

        A queue whose realCap on a resource equals its parent's is implied by the parent's check
        (its usage is part of the parent's), so only the queue that sets a limit is checked.
        """
        got = self._checks.get(leaf)
        if got is None:
            got = []
            tree, caps = self.tree, self.cap_rows
            for q in reversed(tree.path[leaf]):
                p = tree.parent[q]
                for r in range(self.index.size):
                    if p == 0 or caps[q][r] < caps[p][r]:
                        got.append((q, r, caps[q][r]))
            self._checks[leaf] = got
        return got

    # --- checks ------------------------------------------------------------------------------
    def _capability(self, job: _Job, leaf: _Leaf) -> Wait | None:
        got = leaf.over_cap.get(job.rid)
        if got is not None:
            return got
        if leaf.cap_ok.get(job.rid) == self._charges:
            return None
        req = job.req
        capacity = self.cap_rows[0]
        for r in job.dims:
            if req[r] > capacity[r]:
                got = leaf.over_cap[job.rid] = Wait(
                    WaitKind.ExceedsCapacity, capacity_reason(self.index, r, capacity[r], req[r])
                )
                return got
        alloc = self.tree.alloc
        # Top-down, so a limit a leaf only inherits is reported at the queue that sets it.
        for q, r, cap in self._limits(job.leaf):
            need = req[r]
            if need and alloc[q][r] + need > cap:
                a = alloc[q][r]
                key = ("cap", q, r, a, need)
                got = self._reasons.get(key)
                if got is None:
                    explicit = bool(self.tree.capability[q][r] <= cap)
                    got = Wait(
                        WaitKind.Capability,
                        capability_reason(self.tree.names[q], self.index, r, cap, a, need, explicit),
                    )
                    self._reasons[key] = got
                leaf.over_cap[job.rid] = got
                return got
        leaf.cap_ok[job.rid] = self._charges
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
        """Decide the jobs that must wait whatever happens next, then re-key the queue's next job.

        The hot loop of a busy cycle (most queues' next jobs wait): the common answers are inlined.
        """
        jobs, decisions = leaf.jobs, self.decisions
        over_cap, cap_ok, charges = leaf.over_cap, leaf.cap_ok, self._charges
        lookup = self.failures.lookup
        now, after = self.snap.now, self.snap.starvation_after
        # Only _decide plans reclaims, so whether this queue may still plan one holds for the loop.
        reclaims = (
            bool(self.snap.running)
            and self._plans < MAX_RECLAIM_PLANS
            and not leaf.reclaim_failed
            and leaf.reclaiming is None
        )
        k, n = leaf.next, len(leaf.ordered)
        while k < n:
            if k == len(jobs):
                self._make(leaf)
            job = jobs[k]
            wait = over_cap.get(job.rid)  # a request already over a limit
            if wait is None and cap_ok.get(job.rid) != charges:
                wait = self._capability(job, leaf)
            if wait is None:
                best = lookup(job.cand, job.gang)
                if best is None:
                    leaf.checked_at = charges
                    break
                starving = now - job.snap.waiting_since > after
                if (starving and leaf.starving is None) or (reclaims and self._may_reclaim(job, leaf)):
                    leaf.checked_at = charges
                    break
                wait = self._behind(job, leaf, best) if starving else self._no_fit(job, best)
            decisions[job.snap.uid] = wait
            k += 1
        leaf.next = k
        self.order.update(i, jobs[k].req if k < n else None)

    def _no_fit(self, job: _Job, best: str) -> Wait:
        key = ("fit", job.gang.tag, best)
        got = self._reasons.get(key)
        if got is None:
            got = Wait(WaitKind.NoFit, f"no cluster fits gang: {self.clusters.describe(job.gang)}; {best}")
            self._reasons[key] = got
        return got

    def _held_back(self, leaf: int) -> list[int]:
        """Unmet guarantees of queues outside this leaf's path: capacity this job may not use."""
        got = self._held.get(leaf)
        if got is not None and got[0] == self._need_version:
            return got[1]
        out = [0] * self.index.size
        tree = self.tree
        for q in tree.path[leaf]:
            siblings = self.need_sum[tree.parent[q]]
            mine = self.need[q]
            out = [o + s - m for o, s, m in zip(out, siblings, mine, strict=True)]
        self._held[leaf] = (self._need_version, out)
        return out

    def _refresh_need(self, q: int) -> None:
        """need(q) = max(pos(guarantee - allocated), sum of children's needs); keeps parents' sums."""
        g, a, kids = self.tree.guarantee[q], self.tree.alloc[q], self.need_sum[q]
        new = [max(gv - av, ks, 0) for gv, av, ks in zip(g, a, kids, strict=True)]
        old = self.need[q]
        if new == old:
            return
        p = self.tree.parent[q]
        self.need_sum[p] = [s + n - o for s, n, o in zip(self.need_sum[p], new, old, strict=True)]
        self.need[q] = new
        self._need_version += 1

    def _guarantees(self, job: _Job) -> Wait | None:
        held = self._held_back(job.leaf)
        if not any(held):
            return None
        free = self.clusters.free_total()
        for r in job.dims:
            need = job.req[r]
            if held[r] > 0 and free[r] - held[r] < need:
                return Wait(WaitKind.Guarantee, guarantee_reason(self.index, r, free[r], held[r], need))
        return None

    # --- the cycle ---------------------------------------------------------------------------
    def run(self) -> AdmissionResult:
        self.prepare()
        budget = self.snap.max_admissions
        while True:
            i = self.order.pick()
            if i < 0:
                break
            if budget and len(self.admitted) >= budget:
                self._out_of_budget(budget)
                break
            leaf = self.leaves[i]
            job = leaf.jobs[leaf.next]
            leaf.next += 1
            self.decisions[job.snap.uid] = self._decide(job, leaf)
            self._advance(i, leaf)
        statuses = queue_statuses(self.tree, self.snap, self.queue_jobs, self.queue_admitted, self.index)
        return AdmissionResult(
            decisions=self.decisions,
            reclaims=tuple(self.reclaims),
            queues=statuses,
            admitted_order=tuple(self.admitted),
        )

    def _out_of_budget(self, budget: int) -> None:
        """Every job not decided yet waits for the next cycle: this one admitted its most."""
        wait = Wait(
            WaitKind.CycleBudget,
            f"waiting its turn: this cycle admitted {budget} jobs, the most one cycle admits "
            "(--max-admissions-per-cycle); the rest are looked at next cycle"
        )
        for leaf in self.leaves.values():
            self._wait_all(leaf.ordered[leaf.next :], wait)
            leaf.next = len(leaf.ordered)

    def _decide(self, job: _Job, leaf: _Leaf) -> Admit | Wait:
        if leaf.checked_at != self._charges:  # usage moved since the check in _advance
            wait = self._capability(job, leaf)
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
            if any(c in leaf.held for c in job.cand.ids):
                reserved = self._reserved_reason(job, leaf)
                if reserved is not None:
                    return reserved
            best = self.clusters.best_effort(job.cand, job.gang)
            topo = job.snap.network_topology
            if topo is not None and topo[0] == "hard":
                # a topology failure says nothing about the same gang without topology: not cached
                best = f"no HyperNode of {tier_text(topo[1])} holds it in any candidate cluster ({best})"
            elif not any(c in leaf.held for c in job.cand.ids):
                self.failures.record(job.cand, job.gang, best, self.clusters.describe(job.gang))
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
        key = ("behind", job.gang.tag, best, leaf.starving)
        got = self._reasons.get(key)
        if got is None:
            got = Wait(
                WaitKind.BehindStarving,
                f"no cluster fits gang: {self.clusters.describe(job.gang)}; {best}; starving, but queued "
                f"behind the starving job {leaf.starving} of queue {self.tree.names[job.leaf]}"
            )
            self._reasons[key] = got
        return got

    def _place(self, job: _Job, leaf: _Leaf) -> Admit | None:
        clusters = self.clusters
        topo = job.snap.network_topology
        found: tuple[int, Placement] | None = None
        if topo is not None:
            on_topology = place_with_topology(
                clusters, self._hypernode_rows, job.cand, job.gang, leaf.held, topo[1]
            )
            if on_topology is not None:
                found = (on_topology[0], clusters.placement_from(*on_topology))
            elif topo[0] == "hard":
                return None
        if found is None:
            found = clusters.place(job.cand, job.gang, leaf.held)
        if found is None:
            return None
        c, placement = found
        clusters.commit(c, placement, job.gang)
        self._charge(job)
        self.admitted.append(job.snap.uid)
        return Admit(clusters.names[c])

    def _charge(self, job: _Job) -> None:
        self._charges += 1
        self.queue_admitted[job.leaf] += 1
        tree = self.tree
        req = job.req
        guards = self.guards
        for q in tree.path[job.leaf]:
            a = tree.alloc[q]
            for r in job.dims:
                a[r] += req[r]
            if guards[q]:
                self._refresh_need(q)
        root = tree.alloc[0]
        for r in job.dims:
            root[r] += req[r]

    def _reserved_reason(self, job: _Job, leaf: _Leaf) -> Wait | None:
        for c in self.clusters.ranked(job.cand, job.gang):
            if c in leaf.held and self.clusters.fit(c, job.gang) is not None:
                return Wait(
                    WaitKind.ReservedForStarving,
                    f"capacity on {self.clusters.names[c]} that fits gang {self.clusters.describe(job.gang)} "
                    f"is reserved for the starving job {leaf.held_for[c]} of queue "
                    f"{self.tree.names[job.leaf]}"
                )
        return None

    def _plan_reclaim(self, job: _Job, leaf: _Leaf) -> Wait | None:
        self._plans += 1
        cand = self._fits_allocatable(job)
        if self._planner is None:
            snap = self.snap
            protected = snap.now - snap.reclaim_min_runtime if snap.reclaim_min_runtime > 0 else None
            self._planner = ReclaimPlanner(snap.running, self.tree, self.clusters, self.index, protected)
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
            WaitKind.Reclaiming,
            f"queue {queue} is below its deserved share: reclaiming {len(victims)} job"
            f"{'s' if len(victims) != 1 else ''} on {cluster} ({names}); gang "
            f"{self.clusters.describe(job.gang)} is admitted once they stop"
        )

    def _fits_allocatable(self, job: _Job) -> list[int]:
        key = (job.cand.key, job.gang.tag)
        got = self._whole.get(key)
        if got is None:
            got = self._whole[key] = self.clusters.fits_allocatable(job.cand, job.gang)
        return got

    def _reserve(self, job: _Job, leaf: _Leaf, best: str) -> Wait:
        head = f"no cluster fits gang: {self.clusters.describe(job.gang)}; {best}"
        found = reservation(self.clusters, self._fits_allocatable(job), job.gang)
        if found is None:
            return Wait(WaitKind.NeverFits, f"{head}; no candidate cluster could hold it even when empty")
        c = found.cluster
        leaf.held[c] = found
        leaf.held_for[c] = job.snap.uid
        leaf.starving = job.snap.uid
        waited = int(self.snap.now - job.snap.waiting_since)
        return Wait(
            WaitKind.Starving,
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
