"""Cross-cluster reclaim in a cycle: whether a job may reclaim now, and its plan, of whole jobs
(reclaim_jobs.py) or of single surplus pods (reclaim_pods.py), with the reasons both sides show.
"""

from __future__ import annotations

import numpy as np

from vglobal.admission.explain import reclaiming_reason, victim_reason
from vglobal.admission.fit.index import FloatArray, ResourceIndex
from vglobal.admission.fit.placement import Clusters
from vglobal.admission.prepare import Job, Leaf
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import Reclaim, Snapshot, Wait, job_ref
from vglobal.admission.victims.ask import Ask
from vglobal.admission.victims.claims import Claims, close
from vglobal.admission.victims.losable import set_deserved
from vglobal.admission.victims.reclaim_jobs import MAX_RECLAIM_PLANS, POD_SLOTS, ReclaimPlanner
from vglobal.admission.victims.reclaim_pods import PodPlan, PodReclaims
from vglobal.admission.victims.victim_walk import Victim
from vglobal.admission.victims.worth import WORTH, Worth
from vglobal.model.reasons import WaitKind

# Failed plans a queue may make in a cycle, each for a job smaller than those before it on some
# resource: a head too big to reclaim for does not keep smaller jobs behind it at zero.
RECLAIM_TRIES_PER_QUEUE = 3


class Reclaims:
    """A cycle's reclaims: whether a job may plan one now, and the victims of the plans made."""

    def __init__(
        self,
        snapshot: Snapshot,
        tree: QueueTree,
        clusters: Clusters,
        index: ResourceIndex,
        offsets: list[list[float]] | None = None,
        taken: set[str] | None = None,
        claims: Claims | None = None,
    ) -> None:
        """`offsets`: the fair order's decayed offsets (order.decayed_offsets), None = none.
        `taken`: job and pod uids already victims this cycle (shared with preemption).
        `claims`: where a plan of whole jobs claims the room its victims free (claims.py)."""
        self.taken: set[str] = set() if taken is None else taken
        self.snap, self.tree, self.clusters, self.index = snapshot, tree, clusters, index
        self.claims = claims
        self._used = None if offsets is None else _decayed_shares(tree, offsets)
        rule = snapshot.policy.reclaim_rule
        self.worth = Worth(snapshot, tree, index, offsets) if rule == WORTH else None
        self.des_rows = set_deserved(tree, index)
        self._slots = self.slots = index.col.get(POD_SLOTS, -1)
        self.plans = 0
        self.victims: list[Reclaim] = []
        self._planner: ReclaimPlanner | None = None  # built on the first plan
        self._pods: PodReclaims | None = None

    def open_to(self, leaf: Leaf) -> bool:
        """Whether the queue may still plan a reclaim this cycle (whatever its next job)."""
        return (
            bool(self.snap.running)
            and self.plans < MAX_RECLAIM_PLANS
            and not leaf.reclaim_failed
            and leaf.reclaiming is None
        )

    def may(self, job: Job, leaf: Leaf) -> bool:
        """A job may reclaim when its queue stays within its deserved share with it, counting the jobs
        already waiting on a plan, and it has waited long enough. Within: on at least one resource
        it asks for where the queue's spec names its deserved (Volcano's capacity PreemptiveFn), on
        every one where deserved is the weighted share (proportion's: a queue over its share of cpu
        does not reclaim cpu because its share of memory is unused). Pod slots aside, which Volcano
        does not count as a resource."""
        if leaf.reclaim_failed or leaf.reclaiming is not None or not self.snap.running:
            return False
        if job.snap.preemption_policy == "Never":
            return False  # its PriorityClass says it waits for free capacity, as in Volcano's reclaim
        if self.plans >= MAX_RECLAIM_PLANS:
            return False  # planning is the costly step: the rest waits for the next cycle
        if self.snap.now - job.snap.waiting_since < self.snap.policy.reclaim_after:
            return False
        if any(all(a >= b for a, b in zip(job.req, f, strict=True)) for f in leaf.reclaim_failures):
            return False  # no smaller than a job of its queue whose plan failed this cycle
        worth = self.worth
        if worth is not None and not worth.may_take(job.leaf) and not self.within_guarantee(job, leaf):
            return False  # near or above its share as admission judges it: hysteresis
        alloc = self.tree.alloc[job.leaf]
        des = self.des_rows[job.leaf]
        planned = leaf.planned or [0] * self.index.size
        within = (alloc[r] + planned[r] + job.req[r] <= des[r] for r in job.dims if r != self._slots)
        return any(within) if self.tree.snaps[job.leaf].deserved is not None else all(within)

    def failed(self, job: Job, leaf: Leaf) -> None:
        """Note a failed plan of the queue's: after a few, the queue waits for the next cycle."""
        leaf.reclaim_failures.append(job.req)
        leaf.reclaim_failed = len(leaf.reclaim_failures) >= RECLAIM_TRIES_PER_QUEUE

    def within_guarantee(self, job: Job, leaf: Leaf | None) -> bool:
        """Whether the job keeps its queue at or below its guarantee (counting the jobs waiting on a
        plan) on every resource the guarantee names that the job asks for, one at least, pod slots
        aside. Such a reclaim is the guarantee's promise: it goes at once by Volcano's rule, whatever
        the worth rule, its margin and the fair-share half-life would say."""
        guarantee, alloc = self.tree.guarantee[job.leaf], self.tree.alloc[job.leaf]
        planned = (leaf.planned if leaf is not None else None) or [0] * self.index.size
        named = [r for r in job.dims if r != self._slots and guarantee[r] > 0]
        return bool(named) and all(alloc[r] + planned[r] + job.req[r] <= guarantee[r] for r in named)

    def short(self, job: Job, leaf: Leaf | None) -> list[bool]:
        """Per resource: whether the job asks for it and its queue stays within its deserved there
        with it (counting the jobs already waiting on a plan): the resources a reclaim for it is
        for. A victim's queue must be above its deserved on one of them that the victim uses, so
        a queue short of memory takes no cpu-holding job from a queue that is over on cpu alone
        (both would then reclaim from each other on the resource they are short of, for ever)."""
        over = self.over(job, leaf)
        out = [False] * self.index.size
        for r in job.dims:
            if r != self._slots and not over[r]:
                out[r] = True
        return out

    def over(self, job: Job, leaf: Leaf | None) -> list[bool]:
        """Per resource: whether the job's queue is above its deserved there with the job (counting
        the jobs waiting on a plan)."""
        alloc = self.tree.alloc[job.leaf]
        des = self.des_rows[job.leaf]
        planned = (leaf.planned if leaf is not None else None) or [0] * self.index.size
        return [a + p + r > d for a, p, r, d in zip(alloc, planned, job.req, des, strict=True)]

    def plan_pods(
        self, ask: Ask, leaf: Leaf | None, need: list[int] | None = None, within: int = 0
    ) -> PodPlan | None:
        """Surplus pods of other queues whose eviction lets the job fit now (reclaim_pods.py)."""
        self.plans += 1
        if self._pods is None:
            self._pods = PodReclaims(
                self.snap, self.tree, self.clusters, self.index, self._slots, self.taken, self.worth
            )
        cand = self.clusters.fits_allocatable(ask.job.cand, ask.job.gang)
        short = self.short(ask.job, leaf)
        return self._pods.plan(ask, cand, need or [0] * self.index.size, within, short)

    def plan_jobs(self, ask: Ask, leaf: Leaf | None) -> tuple[int, list[Victim]] | None:
        """Whole running jobs of other queues whose stop lets the job fit (reclaim_jobs.py)."""
        job = ask.job
        self.plans += 1
        if self._planner is None:
            snap, policy = self.snap, self.snap.policy
            protected = snap.now - policy.reclaim_min_runtime if policy.reclaim_min_runtime > 0 else None
            limit = policy.reclaim_limit
            self._planner = ReclaimPlanner(
                snap.running, self.tree, self.clusters, self.index, protected, limit, self._used, self.taken,
                self.worth,
            )
        cand = self.clusters.fits_allocatable(job.cand, job.gang)
        short = np.array(self.short(job, leaf), dtype=bool)
        judged = not self.within_guarantee(job, leaf)  # beyond its guarantee: worth and decay judge
        worth = self.worth if judged else None
        pays = None if worth is None else worth.pays(job.leaf, job.req, job.snap.waiting_since)
        return self._planner.plan(job.leaf, cand, job.gang, short, ask.cards, ask.mask, pays, judged)

    def plan(self, ask: Ask, leaf: Leaf) -> Wait | None:
        """Plan victims for the job (Reclaims in `victims`) and say so, or None if none would do."""
        clusters, job = self.clusters, ask.job
        plan = self.plan_jobs(ask, leaf)
        if plan is None:
            return None
        c, victims = plan
        cluster = clusters.names[c]
        queue = self.tree.names[job.leaf]
        for v in victims:
            reason = victim_reason(self.tree.names[v.queue], job_ref(job.snap), queue)
            self.victims.append(Reclaim(v.uid, cluster, job.snap.uid, reason))
        if self.claims is not None:
            rows = {int(r) for v in victims for r in v.rows}
            if self._planner is not None:
                rows |= self._planner.packed_rows(c, victims, job.gang, ask.mask)
            nodes = clusters.node_names(c, rows)
            self.claims.make(job.snap.uid, cluster, nodes, [v.uid for v in victims])
            # What is free there now is part of the plan too: nobody else takes it this cycle.
            close(clusters, c, rows)
        planned = leaf.planned or [0] * self.index.size
        leaf.planned = [p + r for p, r in zip(planned, job.req, strict=True)]
        return Wait(
            WaitKind.Reclaiming,
            reclaiming_reason(
                queue, cluster, [self.snap.running_name(v.uid) for v in victims], clusters.describe(job.gang)
            ),
        )


def _decayed_shares(tree: QueueTree, offsets: list[list[float]]) -> FloatArray:
    """Per queue: max over resources of its decayed allocation over its deserved."""
    decayed = np.array(tree.initial_alloc, dtype=np.float64) + np.array(offsets, dtype=np.float64)
    deserved = np.array(tree.deserved, dtype=np.float64).reshape(decayed.shape)
    ratio = np.where(deserved > 0, np.maximum(decayed, 0.0) / np.maximum(deserved, 1.0), 0.0)
    out: FloatArray = ratio.max(axis=1, initial=0.0)
    return out
