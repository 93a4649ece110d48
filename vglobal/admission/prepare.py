"""A snapshot in admission's form, made once per cycle before any job is decided.

Resource names become the columns of dense rows (ResourceIndex). Jobs repeat a handful of requests
and gangs, so each distinct one is converted once; the hub shares one object per distinct value,
so identity (a C-level int key) answers almost every lookup before a vector's Python-level hash and
equality are needed. Pending jobs are grouped per queue, their demand goes into the queue tree, and
a queue's jobs are turned into admission's form (Job) only as the cycle reaches them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from vglobal.admission.explain import lookback_wait, queue_wait
from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.gang import PreparedGang, prepare_gang
from vglobal.admission.fit.group_limits import GroupLimits
from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.fit.node_rows import NodeRows
from vglobal.admission.fit.nodegroups import NodeGroups
from vglobal.admission.fit.placement import Clusters, Held
from vglobal.admission.fit.pod_anti import PodAntiAffinity
from vglobal.admission.ledger import Ledger
from vglobal.admission.memo import Memo
from vglobal.admission.queue_jobs import QueueJobs, summarise
from vglobal.admission.share.order import queue_order
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import Gang, PendingByQueue, PendingJob, Snapshot, Wait
from vglobal.model.placement_prefs import NO_PREFS
from vglobal.model.queue_affinity import QueueAffinity
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import ResourceVector

WaitAll = Callable[[Iterable[PendingJob], Wait], None]  # decides that these jobs wait, and why
# A queue's jobs made admission's form at a time once the cycle is past its head (Prepared.make).
_MAKE_AHEAD = 64


@dataclass(slots=True)
class Job:
    snap: PendingJob
    leaf: int
    req: list[int]  # shared by every job with the same request
    rid: int  # names that request within the cycle
    dims: tuple[int, ...]
    gang: PreparedGang
    cand: Candidates
    affinity: QueueAffinity | None = None  # its queue's node groups (nodegroups.py)
    anti: bool = False  # pod anti-affinity may close nodes to it (pod_anti.py)
    limited: bool = False  # its queue limits what it holds per node group (group_limits.py)


@dataclass(slots=True)
class Leaf:
    """A leaf queue's jobs and what the steps of the cycle note about it as they decide them."""

    index: int  # the queue's place in the tree
    ordered: list[PendingJob] = field(default_factory=list)  # the jobs looked at, in queue order
    # Those past the look-back, in queue order: each admission of the queue's lets the next of
    # them be looked at (taken: how many have been), so the look-back bounds the jobs a cycle
    # examines that wait, not those it admits.
    beyond: list[PendingJob] = field(default_factory=list)
    taken: int = 0
    # The first of them in admission's form, made as the cycle reaches them: a burst cycle stops at
    # its admission budget or at each queue's head, long before most of them.
    jobs: list[Job] = field(default_factory=list)
    next: int = 0
    # Starvation reservations of this queue: cluster -> per-node capacity its later jobs may not use.
    held: dict[int, Held] = field(default_factory=dict)
    held_for: dict[int, str] = field(default_factory=dict)
    planned: list[int] | None = None  # requests of jobs waiting on a planned reclaim
    reclaim_failed: bool = False
    # Requests of this cycle's jobs of the queue whose reclaim failed though they were short of
    # their share everywhere: a later job no smaller on every resource would fail as well.
    reclaim_failures: list[list[int]] = field(default_factory=list)
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


def resource_index(
    snapshot: Snapshot,
    requests: Iterable[ResourceVector],
    gangs: Iterable[Gang],
    nodes: NodeRows | None = None,
) -> ResourceIndex:
    """Every resource the queues, nodes, unplaced gangs and pending jobs name (``nodes``: the
    nodes' names kept from the last cycles)."""
    names: set[str] = set()
    for q in snapshot.queues:
        for vec in (q.capability, q.deserved, q.guarantee, q.allocated):
            if vec is not None:
                names.update(_names(vec))
    if nodes is not None:
        names |= nodes.names(snapshot.clusters)
    for c in snapshot.clusters:
        if nodes is None:
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


class Prepared:
    """The cycle's index, clusters (unplaced gangs already taken) and queue tree, the distinct
    requests and gangs of the pending jobs in dense form, and the jobs grouped per queue."""

    def __init__(self, snapshot: Snapshot, memo: Memo | None = None) -> None:
        self.memo = memo
        rid_of: dict[ResourceVector, int] = {}
        gid_of: dict[Gang, int] = {}
        rid_by_id: dict[int, int] = {}
        gid_by_id: dict[int, int] = {}
        counts: dict[tuple[str, int], int] = {}  # jobs per (queue, request): the queues' demand
        by_queue: dict[str, Sequence[PendingJob]] = {}
        lists: dict[str, list[PendingJob]] = {}  # the same, grouped here
        self.grouped: list[PendingJob] = []  # HyperJobs' children: decided by admission/hyperjob.py
        # Per queue handed in grouped: its jobs summarised (queue_jobs.py), by the memo when kept.
        self.summaries: dict[str, QueueJobs] = {}
        self.by_uid: Mapping[str, PendingJob] | None = None  # every pending job, where the memo keeps them
        pending = snapshot.pending
        if isinstance(pending, PendingByQueue):
            for queue, queued in pending.by_queue.items():
                if not queued:
                    continue
                summary = summarise(queued) if memo is None else memo.queue(queue, queued)
                self.summaries[queue] = summary
                for vec, n in summary.requests.values():
                    rid = rid_by_id.get(id(vec))
                    if rid is None:
                        rid = rid_by_id[id(vec)] = rid_of.setdefault(vec, len(rid_of))
                    key = (queue, rid)
                    counts[key] = counts.get(key, 0) + n
                for gang, _ in summary.gangs.values():
                    if id(gang) not in gid_by_id:
                        gid_by_id[id(gang)] = gid_of.setdefault(gang, len(gid_of))
                self.grouped += summary.grouped
                if summary.lone:
                    by_queue[queue] = summary.lone
            pending = ()
            if memo is not None and snapshot.claims:  # the claims' jobs are found by uid
                self.by_uid = memo.pending()
        # Passes over all jobs go in snapshot order (memory order): sorted, they would miss caches.
        for job in pending:
            vec, gang, queue = job.request, job.gang, job.queue
            rid = rid_by_id.get(id(vec))
            if rid is None:
                rid = rid_by_id[id(vec)] = rid_of.setdefault(vec, len(rid_of))
            if id(gang) not in gid_by_id:
                gid_by_id[id(gang)] = gid_of.setdefault(gang, len(gid_of))
            key = (queue, rid)
            counts[key] = counts.get(key, 0) + 1
            if job.group is not None:
                self.grouped.append(job)
                continue
            got = lists.get(queue)
            if got is None:
                got = lists[queue] = []
            got.append(job)
        self.by_queue = by_queue if self.summaries else lists
        self.rid_by_id, self.gid_by_id = rid_by_id, gid_by_id
        nodes = None if memo is None else memo.nodes
        self.index = index = resource_index(snapshot, rid_of, gid_of, nodes)
        if nodes is not None:
            nodes.index(index)
        self.req_rows = [index.row(vec) for vec in rid_of]
        self.req_dims = [tuple(r for r, v in enumerate(row) if v) for row in self.req_rows]
        self.ledger = Ledger()  # what the cycle decides and changes (ledger.py)
        self.clusters = clusters = Clusters(
            snapshot.clusters,
            index,
            snapshot.policy.placement,
            self.ledger,
            snapshot.policy.keep_accelerators,
            snapshot.policy.placement_config,
            snapshot.now,
            None if nodes is None else nodes.rows,
        )
        demand: dict[str, list[int]] = {}
        for (queue, rid), n in counts.items():
            row = demand.setdefault(queue, [0] * index.size)
            for r in self.req_dims[rid]:
                row[r] += n * self.req_rows[rid][r]
        capacity = index.vector(clusters.capacity().tolist())
        if memo is None:
            self.tree = QueueTree(snapshot.queues, index, capacity, demand.items())
        else:
            self.tree = QueueTree(snapshot.queues, index, capacity, demand.items(), memo.fill)
        self.queue_jobs = [0] * len(self.tree.names)  # pending jobs per queue (leaf or not)
        # Per resource, the largest node: what "big" means when sorting a gang's shapes.
        biggest = clusters.max_alloc.max(axis=0) if len(clusters.names) else np.zeros(index.size)
        self._scale = np.maximum(np.asarray(biggest, dtype=np.int64).reshape(index.size), 1)
        self._gangs: dict[object, PreparedGang] = {}
        self._by_spec: dict[Gang, PreparedGang] = {}
        clusters.take_unplaced(self.gang)
        self.gangs = [self.gang(spec) for spec in gid_of]
        self.anywhere = clusters.candidates_anywhere()
        self.nodegroups = NodeGroups(snapshot.queues, clusters)
        self.anti = PodAntiAffinity(snapshot.running, clusters)
        self.group_limits = GroupLimits(snapshot.queues, snapshot.running, clusters, index)

    @property
    def scale(self) -> IntArray:
        """Per resource, the largest node's allocatable (at least 1): how shapes are ordered."""
        return self._scale

    def gang(self, spec: Gang) -> PreparedGang:
        """The gang's prepared form; equal gangs share one (and its failure-cache entries)."""
        got = self._by_spec.get(spec)  # the hub shares gang objects: mostly an identity hit
        if got is None:
            prepared = prepare_gang(spec, self.index, self._scale)
            got = self._by_spec[spec] = self._gangs.setdefault(prepared.key, prepared)
        return got

    def leaves(self, lookback: int, wait_all: WaitAll) -> dict[int, Leaf]:
        """The leaf queues that take jobs now, each with the jobs it offers this cycle in queue
        order. Jobs of other queues wait (wait_all); so do those past a queue's first `lookback`
        until its admissions let them be looked at (Leaf.beyond)."""
        tree = self.tree
        leaves: dict[int, Leaf] = {}
        for queue, jobs in self.by_queue.items():
            i = tree.idx.get(queue, -1)
            if i >= 0:
                self.queue_jobs[i] += len(jobs)
            if i < 0 or not tree.is_leaf[i] or not tree.open[i]:
                wait_all(jobs, queue_wait(tree, queue))
                continue
            if tree.snaps[i].over_budget:
                wait_all(jobs, Wait(WaitKind.OverBudget, tree.snaps[i].over_budget))
                continue
            leaf = leaves.get(i)
            if leaf is None:
                leaf = leaves[i] = Leaf(i)
            summary = self.summaries.get(queue)
            if summary is not None:  # its order kept: copy only the look-back and those past it
                full = summary.ordered
                ordered = full[:lookback] if lookback else full.copy()
                if lookback and len(full) > lookback:
                    leaf.beyond = full[lookback:]
                    wait_all(leaf.beyond, lookback_wait(queue, lookback, len(full)))
                leaf.ordered = ordered
                continue
            ordered = queue_order(jobs) if self.memo is None else self.memo.order(queue, jobs)
            if lookback and len(ordered) > lookback:
                leaf.beyond = ordered[lookback:]
                wait_all(leaf.beyond, lookback_wait(queue, lookback, len(ordered)))
                del ordered[lookback:]
            leaf.ordered = ordered
        return leaves

    def make(self, leaf: Leaf) -> None:
        """The leaf's next jobs in admission's form (see Leaf.jobs), a few at a time: in a busy
        cycle most queues' jobs all wait, and are reached one after the other."""
        start = len(leaf.jobs)
        append, form = leaf.jobs.append, self._former(leaf.index)
        for job in leaf.ordered[start : start + (_MAKE_AHEAD if start else 1)]:
            append(form(job))

    def job_of(self, job: PendingJob, leaf: int) -> Job:
        """One job in admission's form, as make() forms a queue's: a HyperJob's child."""
        return self._former(leaf)(job)

    def _former(self, i: int) -> Callable[[PendingJob], Job]:
        """What turns a job of leaf queue ``i`` into admission's form."""
        rid_by_id, gid_by_id, gangs = self.rid_by_id, self.gid_by_id, self.gangs
        req_rows, req_dims, anywhere = self.req_rows, self.req_dims, self.anywhere
        queue = self.tree.names[i]
        affinity = self.nodegroups.of(queue)
        limited = self.group_limits.limited(queue)
        anti_on = self.anti.running_terms  # a running pod's own terms may select the job

        stages = self.clusters.stages
        staged_any = stages.no_schedule  # a cluster taint every job without toleration meets

        def form(job: PendingJob) -> Job:
            rid = rid_by_id[id(job.request)]
            staged = staged_any or job.prefs is not NO_PREFS  # the placement stages' filters may apply
            if (
                job.allowed_clusters is None
                and not job.cluster_selector
                and not job.excluded_clusters
                and not job.workload
                and not staged
            ):
                cand = anywhere  # the common case, inlined
            else:
                cand = self.clusters.candidates(job)
            if affinity is not None:
                cand = self.nodegroups.candidates(cand, affinity, queue)
            anti = self.anti.applies(job) if anti_on or job.anti_affinity else False
            if anti:
                cand = self.anti.candidates(cand, job)
            if limited:
                cand = self.group_limits.note(cand, queue)
            gang = gangs[gid_by_id[id(job.gang)]]
            return Job(job, i, req_rows[rid], rid, req_dims[rid], gang, cand, affinity, anti, limited)

        return form
