"""Room for a HyperJob's children made by victims, as a lone job's is made (admit.py): lower-priority
pods of its own queue (preempt.py) and surplus pods of queues above their deserved share
(reclaim_pods.py), with the same planners and Volcano's victim rules.

Rules (the README's "HyperJobs" says the same):
- A HyperJob gets victims only when its children do not all fit free capacity (or its queue's
  limits): the decision is then made again, each child placed in free room if it fits, else where
  victims planned for it on one cluster free room (a cluster no sibling holds first). Children
  left over once minAvailable are admitted are decided again so too, needing none of them.
- Preemption first (a child of higher priority than a victim, whose PreemptionPolicy is not
  Never), then reclaim (when the whole HyperJob keeps its queue within its deserved share): surplus
  pods, else whole jobs (runs not known pod by pod), of queues above their deserved share.
- When the queue's limits keep the HyperJob out, its first children take victims of the queue
  that also give back what the whole exceeds the limits by.
- Victims planned for one child are taken: a later child sees what that child left of their room
  and never plans them again. The HyperJob's own running children are never victims.
- Nothing is kept unless the whole decision is: victims, room and charges are put back exactly
  (they are written through the cycle's ledger, at the decision's checkpoint: ledger.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from vglobal.admission.fit.gang_fit import GangFit, subset
from vglobal.admission.prepare import Job, Leaf
from vglobal.admission.share.checks import Checks
from vglobal.admission.snapshot import Admit, Eviction, Reclaim
from vglobal.admission.victims.ask import Ask
from vglobal.admission.victims.preempt import (
    MAX_PREEMPT_PLANS,
    NEVER,
    Plan,
    Preemptions,
    preemption_evictions,
)
from vglobal.admission.victims.reclaim import Reclaims
from vglobal.admission.victims.reclaim_pods import PodPlan, reclaim_evictions

# HyperJobs decided again with victims per cycle (each plans victims for its children; the lone
# jobs' plans per cycle are theirs); later ones wait a cycle.
MAX_GROUP_TRIES = 16


@dataclass(slots=True)
class _Taken:
    """One child's victims in the decision being tried."""

    job: Job
    plan: Plan
    freed: dict[int, list[int]]  # victim leaf -> the charge it gives back
    nominated: tuple[str, ...]
    reclaimed: PodPlan | None  # None: preempted in its queue


@dataclass(slots=True)
class Planners:
    """The cycle's planners, which lone jobs use too."""

    preempt: Preemptions
    reclaims: Reclaims
    leaves: Mapping[int, Leaf]
    freed: Callable[[], None]  # victims gave room back: the cycle forgets its misfits


class ChildRoom:
    """One HyperJob decision's victims: planned per child at the decision's checkpoint (see module)."""

    def __init__(self, fit: GangFit, checks: Checks, planners: Planners) -> None:
        self.fit, self.checks, self.p = fit, checks, planners
        self.clusters, self.tree = fit.clusters, fit.prep.tree
        self.evictions: list[Eviction] = []  # kept decisions' single pods to evict
        self.whole: list[Reclaim] = []  # and whole jobs to stop
        self._taken: list[_Taken] = []
        self.tries = 0
        self._plans = (0, 0)
        self._owed: list[int] = []
        self._reclaim = False

    def may(self, jobs: Sequence[Job], whole: Job) -> bool:
        """Whether victims could make room at all: a child that may preempt in its queue, or the
        HyperJob may reclaim. ``whole``: the HyperJob as one job of its queue."""
        if self.tries >= MAX_GROUP_TRIES:
            return False
        preempt = self.p.preempt
        low = preempt.lowest.get(whole.leaf)
        if low is not None and any(j.snap.priority > low and j.snap.preemption_policy != NEVER for j in jobs):
            return True
        return self._may_reclaim(whole)

    def _may_reclaim(self, whole: Job) -> bool:
        return self.p.reclaims.may(whole, self.p.leaves.get(whole.leaf) or Leaf(whole.leaf))

    def start(self, whole: Job, siblings: Iterable[str]) -> None:
        """A decision starts: the running children are spared, so no child plans them as victims."""
        preempt = self.p.preempt
        self._taken, self._owed = [], self.checks.excess(whole)
        self._reclaim = self._may_reclaim(whole)
        self.tries += 1
        self._plans = (preempt.plans, self.p.reclaims.plans)
        preempt.spared = frozenset(siblings)

    def owes(self) -> bool:
        """Whether the queue's limits still keep the HyperJob out by what victims must give back."""
        return any(self._owed)

    def place(self, job: Job, ids: Sequence[int], owed: bool = False) -> int | None:
        """The cluster among ``ids`` where victims make room for the child (placed there, in the
        trial), or None. ``owed``: its victims also give back, up to its own request, what the
        queue's limits are exceeded by (preemption only)."""
        return self._place_within(replace(job, cand=subset(job.cand, ids)), owed)

    def _place_within(self, job: Job, owed: bool) -> int | None:
        p, snap = self.p, job.snap
        ask = self.fit.ask(job, self.fit.devices.packer(snap))
        preempt = p.preempt
        low = preempt.lowest.get(job.leaf)
        # as Preemptions.may, less its memory of failed plans: a child's clusters are a subset
        if (
            not snap.partitions
            and low is not None
            and low < snap.priority
            and snap.preemption_policy != NEVER
            and preempt.plans < MAX_PREEMPT_PLANS
        ):
            cand = self.clusters.fits_allocatable(job.cand, job.gang)
            if ask.packer is not None:
                cand = [c for c in cand if ask.packer.could_ever(c, job.gang)]
            need = (
                [min(o, r) for o, r in zip(self._owed, job.req, strict=True)] if owed else [0] * len(job.req)
            )
            plan = preempt.plan(ask, cand, need)
            if plan is not None:
                self._owed = [max(o - f, 0) for o, f in zip(self._owed, plan.freed, strict=True)]
                return self._take(ask, plan, {job.leaf: plan.freed}, None)
        if owed or not self._reclaim:
            return None
        got = p.reclaims.plan_pods(ask, p.leaves.get(job.leaf)) or self._reclaim_jobs(ask)
        if got is None:
            return None
        return self._take(ask, got.plan, got.freed, got)

    def _reclaim_jobs(self, ask: Ask) -> PodPlan | None:
        """Whole jobs of queues above their deserved (for runs not known pod by pod), as a plan the
        child is placed in at once, as in place of whole preempted jobs."""
        found = self.p.reclaims.plan_jobs(ask, self.p.leaves.get(ask.job.leaf))
        if found is None:
            return None
        c, victims = found
        size = len(ask.job.req)
        plan = Plan(c, {}, [0] * size, whole=[v.uid for v in victims], closed=ask.mask(c).closed(()))
        freed: dict[int, list[int]] = {}
        for v in victims:
            for row, use in zip(v.rows.tolist(), v.usage.tolist(), strict=True):
                acc = plan.freed_rows.setdefault(row, [0] * size)
                plan.freed_rows[row] = [a + x for a, x in zip(acc, use, strict=True)]
            acc = freed.setdefault(v.queue, [0] * size)
            freed[v.queue] = [a + x for a, x in zip(acc, v.req_list, strict=True)]
        return PodPlan(plan, freed, {v.uid: v.queue for v in victims})

    def _take(self, ask: Ask, plan: Plan, freed: dict[int, list[int]], reclaimed: PodPlan | None) -> int:
        nominated = self.fit.place_freed(ask.job, plan, ask.packer)
        self._taken.append(_Taken(ask.job, plan, freed, nominated, reclaimed))
        return plan.cluster

    def give_back(self) -> None:
        """The victims' queues get their charge back (before the queue's limits are checked)."""
        for t in self._taken:
            for q, charge in t.freed.items():
                self.checks.release(q, charge)

    def finish(self) -> None:
        """The decision is over, kept or rolled back: lone jobs keep their plans per cycle
        (HyperJobs have their own, MAX_GROUP_TRIES), and no child is spared any more."""
        self.p.preempt.plans, self.p.reclaims.plans = self._plans
        self.p.preempt.spared = frozenset()
        self._taken = []

    def admissions(self, key: str) -> dict[str, Admit]:
        """The decision is kept: its victims are evicted, and each child admitted in their place
        says which victims, of which queue, in which cluster it waits for."""
        names, out, name = self.clusters.names, {}, self.p.reclaims.snap.running_name
        for t in self._taken:
            head = f"HyperJob {key}: child {t.job.snap.name} "
            if t.reclaimed is None:
                evictions, whole, text = preemption_evictions(t.job, t.plan, self.tree, names, name)
                admit = Admit(names[t.plan.cluster], preempting=head + text, nominated=t.nominated)
            else:
                evictions, whole, text = reclaim_evictions(t.reclaimed, t.job, self.tree, names, name)
                admit = Admit(names[t.plan.cluster], reclaiming=head + text, nominated=t.nominated)
            self.evictions += evictions
            self.whole += whole
            out[t.job.snap.uid] = admit
        if self._taken:
            self.p.freed()
        self.finish()
        return out
