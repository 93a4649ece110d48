"""admit(snapshot): one dispatch cycle of global admission (DESIGN.md section 5.3).

The cycle is the loop; each step of 5.3 has a module of its own, in a room by concern (share/,
fit/, victims/), with the cycle's input prepared by prepare.py:
1. queue tree and deserved: share/tree.py, share/water.py (built with the pending demand);
2. order: share/order.py (progressive filling across queues, priority and age within one);
3. checks: share/checks.py (open leaf, realCap up the tree, other queues' guarantees);
4. placement: fit/gang_fit.py (one gang fit for lone jobs and HyperJobs' children: placement.py
   and gang.py per cluster, topology.py and partitions.py for HyperNodes, devices.py for GPU cards,
   nodegroups.py, pod_anti.py and group_limits.py for the nodes a queue or job may use), and
   fit/hyperjob.py for a HyperJob's children across clusters;
5. starvation: victims/starvation.py;  6. reclaim: victims/reclaim.py;  7. explain: explain.py.
A job that fits nowhere may preempt lower-priority pods of its queue (victims/preempt.py), reclaim
from queues above their deserved or, once starving, reserve capacity in its queue; a HyperJob's
children take victims the same way (victims/hyperjob_victims.py). What a job asks of those plans is
made once (victims/ask.py). Everything the cycle changes is written through its ledger (ledger.py),
whose one checkpoint and rollback a HyperJob's decision is tried under.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import partial
from itertools import repeat

import numpy as np

from vglobal.admission.explain import (
    budget_wait,
    never_fit_pod_reason,
    no_fit_reason,
)
from vglobal.admission.fit.closest import never_fits
from vglobal.admission.fit.devices import CardPacker, DeviceFit
from vglobal.admission.fit.failures import FailureCache
from vglobal.admission.fit.gang_fit import GangFit, subset
from vglobal.admission.fit.hyperjob import admit_groups, groups_of
from vglobal.admission.fit.node_mask import closed_rows
from vglobal.admission.fit.placement import Held, HeldRows
from vglobal.admission.fit.stages import with_away
from vglobal.admission.memo import Memo
from vglobal.admission.prepare import Job, Leaf, Prepared
from vglobal.admission.share.checks import Checks
from vglobal.admission.share.order import FairOrder, decayed_offsets
from vglobal.admission.share.status import queue_statuses
from vglobal.admission.snapshot import (
    AdmissionResult,
    Admit,
    Claim,
    Eviction,
    PendingJob,
    Reclaim,
    Snapshot,
    Wait,
    uid_of,
)
from vglobal.admission.victims.ask import Ask, mask_key
from vglobal.admission.victims.claims import Claims, close
from vglobal.admission.victims.hyperjob_victims import ChildRoom, Planners
from vglobal.admission.victims.preempt import Plan, Preemptions, preemption_evictions, victim_order
from vglobal.admission.victims.preempt_topology import confine
from vglobal.admission.victims.reclaim import Reclaims
from vglobal.admission.victims.reclaim_pods import reclaim_evictions
from vglobal.admission.victims.starvation import Starvation
from vglobal.model.reasons import WaitKind


class _Cycle:
    def __init__(self, snapshot: Snapshot, memo: Memo | None = None) -> None:
        self.snap = snapshot
        self.prep = prep = Prepared(snapshot, memo)
        self.tree, self.clusters = prep.tree, prep.clusters
        half_life = snapshot.policy.fair_share_half_life
        decayed = half_life > 0 or any(q.half_life for q in snapshot.queues)
        offsets = decayed_offsets(self.tree, snapshot.queues, half_life) if decayed else None
        self.order = FairOrder(self.tree, offsets)
        self.failures = FailureCache()
        self.checks = Checks(self.tree, prep.index, self.clusters)
        self.claims = Claims(snapshot, prep.ledger, prep.by_uid)
        order = victim_order if memo is None else memo.victim_order(victim_order)
        self.preempt = Preemptions(snapshot, self.tree, self.clusters, prep.index, order)
        # One set of victims taken this cycle for every planner: a job is never taken twice.
        self.reclaims = Reclaims(
            snapshot, self.tree, self.clusters, prep.index, offsets, self.preempt.taken, self.claims
        )
        self.starvation = Starvation(snapshot, self.clusters, self.tree, prep.index)
        self.evictions: list[Eviction] = []
        self.preempted: list[Reclaim] = []
        # The ledger holds the decisions and the admitted order (the hot loop writes them directly:
        # no checkpoint is open outside a HyperJob's decision).
        self.ledger = prep.ledger
        self.decisions, self.admitted = prep.ledger.decisions, prep.ledger.admitted
        self.leaves: dict[int, Leaf] = {}
        self._no_fits: dict[tuple[str, bytes, str], Wait] = {}
        self._nevers: dict[tuple[str, bytes], Wait | None] = {}
        self.devices = DeviceFit(self.clusters, prep.index, snapshot.running, prep.gang)
        self.fit = GangFit(prep, self.devices)  # the gang fit lone jobs and HyperJobs' children share

    def run(self) -> AdmissionResult:
        self.leaves = self.prep.leaves(self.snap.policy.queue_lookback, self._wait_all)
        if self.claims.victim_of:
            self._settle_claims()
        if self.prep.grouped:  # HyperJobs first: one decision each over their children
            groups = groups_of(self.prep.grouped, self.snap.running)
            planners = Planners(self.preempt, self.reclaims, self.leaves, self.freed)
            room = ChildRoom(self.fit, self.checks, planners)  # victims, as lone jobs take them
            budget = self.snap.policy.max_admissions
            admit_groups(groups, self.fit, self.checks, budget, room)
            self.evictions += room.evictions
            self.preempted += room.whole
        for i, leaf in sorted(self.leaves.items()):
            self._advance(i, leaf)
        budget = self.snap.policy.max_admissions
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
            decision = self.decisions[job.snap.uid] = self._decide(job, leaf)
            if leaf.taken < len(leaf.beyond) and type(decision) is Admit:
                leaf.ordered.append(leaf.beyond[leaf.taken])  # the look-back moves on by one
                leaf.taken += 1
            self._advance(i, leaf)
        memo, index = self.prep.memo, self.prep.index
        statuses = queue_statuses(
            self.tree,
            self.snap,
            self.prep.queue_jobs,
            self.checks.admitted,
            index,
            None if memo is None else memo.vector(index),
        )
        return AdmissionResult(
            decisions=self.decisions,
            reclaims=(*self.reclaims.victims, *self.preempted),
            queues=statuses,
            admitted_order=tuple(self.admitted),
            evictions=tuple(self.evictions),
            claims=self.claims.result(),
        )

    def _settle_claims(self) -> None:
        """Before any other job: each job with a standing claim goes into its room, or waits with
        the room closed to the others; the victims of a claim wait behind it (claims.py)."""
        claims, decisions = self.claims, self.decisions
        idx = self.tree.idx
        named = {idx.get(q, -1) for q in claims.pending_queues()}
        for i, leaf in self.leaves.items():
            if i not in named:  # no job of this queue is a claim's: its look-back is left as it is
                continue
            keep: list[PendingJob] = []
            for p in leaf.ordered:
                mine = claims.standing.get(p.uid)
                if mine is not None:
                    got = self._claimed(p, leaf, mine)
                    if got is not None:
                        decisions[p.uid] = got
                        continue
                else:
                    behind = claims.victim_of.get(p.uid)
                    if behind is not None and behind.for_uid != p.uid:
                        decisions[p.uid] = claims.behind(behind)
                        continue
                keep.append(p)
            leaf.ordered = keep

    def _claimed(self, p: PendingJob, leaf: Leaf, claim: Claim) -> Admit | Wait | None:
        """The job of a standing claim admitted into the claimed room, or its wait with the room
        held; None if the claim no longer holds (the job is then decided as any other). It may
        not go into the room of another standing claim not settled yet: the job that room was
        freed for would find it taken, and take victims again."""
        clusters = self.clusters
        c = clusters.col.get(claim.cluster, -1)
        job = self.prep.job_of(p, leaf.index)
        if c not in job.cand.ids or self.checks.capability(job, leaf) is not None:
            self.claims.drop(claim)
            return None
        job = replace(job, cand=subset(job.cand, [c]))
        node_col = clusters.node_col[c]
        before = clusters.free(c).copy()
        # Off the other claims' nodes, those it shares with one too at first.
        for shared in (True, False):
            others = self.claims.rows_of_others(claim, node_col, shared)
            held = leaf.held
            if others:
                base = held.get(c)
                blocked = closed_rows(before, others)
                assert blocked is not None
                held = {**held, c: HeldRows(blocked if base is None else blocked + base.matrix)}
            placed = self._place(job, leaf, self.devices.packer(p), held)
            if placed is not None:
                self.claims.settled(claim)
                # Its agent tries first the nodes it was placed on (Volcano's nominatedNodeName).
                went = np.flatnonzero((clusters.free(c) != before).any(axis=1)).tolist()
                return replace(placed, nominated=clusters.node_names(c, went))
            if not others or not shared:
                break
        close(clusters, c, [node_col[n] for n in claim.nodes if n in node_col])  # nobody else goes there
        self.claims.settled(claim)
        self.checks.charge(job)  # its queue holds the room (as Volcano counts a pipelined job)
        return self.claims.waiting(claim, self.snap.now)

    def _wait_all(self, jobs: Iterable[PendingJob], wait: Wait) -> None:
        # In C: the jobs past the look-backs are most of a large backlog.
        self.decisions.update(zip(map(uid_of, jobs), repeat(wait)))

    def _out_of_budget(self, budget: int) -> None:
        """Every job not decided yet waits for the next cycle: this one admitted its most."""
        wait = budget_wait(budget)
        for leaf in self.leaves.values():
            self._wait_all(leaf.ordered[leaf.next :], wait)
            leaf.next = len(leaf.ordered)

    def _advance(self, i: int, leaf: Leaf) -> None:
        """Decide the jobs that must wait whatever happens next, then re-key the queue's next job.

        The hot loop of a busy cycle (most queues' next jobs wait): the common answers are inlined.
        """
        jobs, decisions = leaf.jobs, self.decisions
        over_cap, cap_ok, charges = leaf.over_cap, leaf.cap_ok, self.checks.charges
        capability, lookup = self.checks.capability, self.failures.lookup
        now, after = self.snap.now, self.snap.policy.starvation_after
        # Only _decide plans reclaims, so whether this queue may still plan one holds for the loop.
        reclaims = self.reclaims.open_to(leaf)
        lowest = self.preempt.lowest.get(leaf.index)  # None: nothing in the queue to preempt
        k, n = leaf.next, len(leaf.ordered)
        while k < n:
            if k == len(jobs):
                self.prep.make(leaf)
            job = jobs[k]
            wait = over_cap.get(job.rid)  # a request already over a limit
            if wait is None and cap_ok.get(job.rid) != charges:
                wait = capability(job, leaf)
            if wait is not None and reclaims and self._capped_parent(job, leaf) is not None:
                leaf.checked_at = -1  # _decide checks again and reclaims below the capped parent
                break
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
            if lowest is not None and job.snap.priority > lowest and self._may_preempt(job, leaf):
                leaf.checked_at = -1  # _decide checks again and preempts
                break
            decisions[job.snap.uid] = wait
            k += 1
        leaf.next = k
        self.order.update(i, jobs[k].req if k < n else None)

    def _decide(self, job: Job, leaf: Leaf) -> Admit | Wait:
        checks = self.checks
        cards = self.devices.packer(job.snap)  # None unless it asks for GPU cards
        if leaf.checked_at != checks.charges:  # usage moved since the check in _advance
            wait = checks.capability(job, leaf)
            if wait is not None:
                if wait.kind == WaitKind.Capability and self._may_preempt(job, leaf):
                    return self._preempt(self.fit.ask(job, cards)) or wait
                within = self._capped_parent(job, leaf)
                if within is not None:
                    asked = self.fit.ask(job, cards)
                    taken = self._reclaim_pods(asked, leaf, self.checks.excess(job), within)
                    if taken is not None:
                        return taken
                    leaf.reclaim_failed = True
                return wait
        if checks.guarded:
            wait = checks.guarantees(job)
            if wait is not None:
                return wait
        best = self.failures.lookup(job.cand, job.gang)
        if best is None:
            placed = self._place(job, leaf, cards)
            if placed is not None:
                return placed
            held = any(c in leaf.held for c in job.cand.ids)
            if held:
                reserved = self.starvation.reserved(job, leaf, cards)
                if reserved is not None:
                    return reserved
            best, plain = self.fit.why_not(job)
            if plain and not held:  # a reservation or a card, partition or HyperNode answer: not cached
                self.failures.record(job.cand, job.gang, best, self.clusters.describe(job.gang))
        ask = None  # made once, if a plan of victims is tried
        if self._may_preempt(job, leaf):
            ask = self.fit.ask(job, cards)
            preempted = self._preempt(ask)
            if preempted is not None:
                return preempted
        if self._may_reclaim(job, leaf):
            ask = confine(ask or self.fit.ask(job, cards), self.clusters, self.fit.hypernodes)
            planned = self.reclaims.plan(ask, leaf)
            if planned is not None:
                leaf.reclaiming = job.snap.uid
                return planned
            taken = self._reclaim_pods(ask, leaf)
            if taken is not None:
                return taken
            # A job short of its share on every resource it asks for failed: the queue's later
            # jobs no smaller would too this cycle, a smaller one may still (its gang may fit where
            # the head's did not, its loss may be worth it, or it is within the queue's guarantee).
            # One bigger than its share on some resource reclaims only on the others, so a smaller
            # job behind it may still (else it keeps the queue at zero).
            short = self.reclaims.short(job, leaf)
            if all(short[r] for r in job.dims if r != self.reclaims.slots):
                self.reclaims.failed(job, leaf)
        if self.starvation.starving(job):
            if leaf.starving is None:
                got = self.starvation.reserve(job, leaf, best, cards)
                return (got.kind == WaitKind.NeverFits and self._never(job)) or got
            return self._behind(job, leaf, best)
        return self._no_fit(job, best)

    def _place(
        self, job: Job, leaf: Leaf, cards: CardPacker | None, held: Mapping[int, Held] | None = None
    ) -> Admit | None:
        c = self.fit.place(job, leaf.held if held is None else held, cards)
        if c is None:
            return None
        self.checks.charge(job)
        self.admitted.append(job.snap.uid)
        grows = self.fit.grown.pop(job.snap.uid, ())
        away, placed = self._away(job, c), self._placed(job, c)
        return Admit(self.clusters.names[c], grows=grows, away=away, placed=placed)

    def _away(self, job: Job, c: int) -> str:
        """Why the job runs away from where it prefers to (stages.py), "" when it does not."""
        return self.clusters.stages.away(c, job.snap.preferred_clusters, job.snap.prefs)

    def _placed(self, job: Job, c: int) -> str:
        """The chosen cluster's placement verdict, where the stages had something to weigh."""
        stages = self.clusters.stages
        if not stages.weighs(job.snap):
            return ""
        return stages.placed_line(c, job.snap, self.clusters.cands.left_out(job.snap))

    def _may_preempt(self, job: Job, leaf: Leaf) -> bool:
        snap = job.snap
        if snap.partitions:
            # a preemption plan packs the gang on the cluster's nodes, not its partitions' HyperNodes
            return False
        return self.preempt.may(leaf.index, snap.priority, snap.preemption_policy, job.gang, mask_key(job))

    def _preempt(self, ask: Ask) -> Admit | None:
        """Lower-priority pods of the job's queue make way for it on one cluster, and it goes
        there now (see preempt.py); None if no cluster has victims enough."""
        clusters, job = self.clusters, ask.job
        cand = clusters.fits_allocatable(job.cand, job.gang)
        if ask.packer is not None:
            cand = [c for c in cand if ask.packer.could_ever(c, job.gang)]
        plan = self.preempt.plan(ask, cand, self.checks.excess(job))
        if plan is None:
            return None
        nominated = self._take_place(ask, plan, {job.leaf: plan.freed})
        preempting = self._record_preemption(job, plan)
        away, placed = self._away(job, plan.cluster), self._placed(job, plan.cluster)
        return Admit(
            clusters.names[plan.cluster], preempting=preempting, nominated=nominated, away=away, placed=placed
        )

    def _reclaim_pods(
        self, ask: Ask, leaf: Leaf, need: list[int] | None = None, within: int = 0
    ) -> Admit | None:
        """Surplus pods of queues above their deserved make way for the job (reclaim_pods.py)."""
        got = self.reclaims.plan_pods(ask, leaf, need, within)
        if got is None:
            return None
        nominated = self._take_place(ask, got.plan, got.freed)
        evictions, whole, text = reclaim_evictions(
            got, ask.job, self.tree, self.clusters.names, self.snap.running_name
        )
        self.evictions += evictions
        self.reclaims.victims += whole
        c = got.plan.cluster
        away, placed = self._away(ask.job, c), self._placed(ask.job, c)
        return Admit(self.clusters.names[c], reclaiming=text, nominated=nominated, away=away, placed=placed)

    def _capped_parent(self, job: Job, leaf: Leaf) -> int | None:
        """A queue above the job's leaf at its limit, below which the job may reclaim from its
        siblings (a capped parent does not block reclaim between its children)."""
        if not self._may_reclaim(job, leaf):
            return None
        return self.checks.capped_at(job)

    def _may_reclaim(self, job: Job, leaf: Leaf) -> bool:
        return self.reclaims.may(job, leaf)

    def _take_place(self, ask: Ask, plan: Plan, freed: dict[int, list[int]]) -> tuple[str, ...]:
        """The job goes where the plan's victims free room, in the same cycle (Volcano pipelines it
        onto the resources being released); their queues get their charge back (and their GPU
        cards, which the job's pods then take). Returns the nodes its gang was packed onto, for its
        agent to try first (Volcano's nominatedNodeName)."""
        for q, charge in freed.items():
            self.checks.release(q, charge)
        self.freed()
        nominated = self.fit.place_freed(ask.job, plan, ask.packer)
        self.checks.charge(ask.job)
        self.admitted.append(ask.job.snap.uid)
        victims = (*plan.whole, *plan.pods)
        nodes = self.clusters.node_names(plan.cluster, plan.freed_rows)
        self.claims.make(ask.job.snap.uid, self.clusters.names[plan.cluster], nodes, victims)
        return nominated

    def freed(self) -> None:
        """Victims gave room and charge back: recorded misfits and over-limit requests may fit."""
        self.failures = FailureCache()
        for other in self.leaves.values():
            other.over_cap.clear()

    def _record_preemption(self, job: Job, plan: Plan) -> str:
        evictions, whole, text = preemption_evictions(
            job, plan, self.tree, self.clusters.names, self.snap.running_name
        )
        self.evictions += evictions
        self.preempted += whole
        return text

    def _no_fit(self, job: Job, best: str) -> Wait:
        key = (job.gang.tag, job.cand.key, best)
        got = self._no_fits.get(key)
        if got is None:
            plain = Wait(WaitKind.NoFit, no_fit_reason(self.clusters.describe(job.gang), best))
            got = self._never(job) or plain
            self._no_fits[key] = got
        return got

    def _behind(self, job: Job, leaf: Leaf, best: str) -> Wait:
        return self._never(job) or self.starvation.behind(job, leaf, best)

    def _never(self, job: Job) -> Wait | None:
        """NeverFits when a pod of the gang fits no node its candidates let it use, even empty:
        waiting changes nothing until the nodes do (judged on allocatable)."""
        key = (job.gang.tag, job.cand.key)
        if key in self._nevers:
            return self._nevers[key]
        aff = job.affinity
        allowed = None if aff is None else partial(self.fit.prep.nodegroups.allowed, aff)
        short = never_fits(self.clusters, job.cand, job.gang, allowed)
        got = None if short is None else Wait(
            WaitKind.NeverFits, never_fit_pod_reason(short, self.clusters.describe(job.gang))
        )
        self._nevers[key] = got
        return got


def admit(snapshot: Snapshot, memo: Memo | None = None) -> AdmissionResult:
    """Decide every pending job of the snapshot: Admit(cluster) or Wait(reason), plus reclaims.

    ``memo``, kept by the caller from cycle to cycle, lets this cycle take over what the last one
    derived from the same inputs (memo.py): the decisions are the same with or without it."""
    # A cycle allocates many small objects while the snapshot holds millions: the cyclic collector
    # would rescan the snapshot again and again (0.5 s+ at 100k jobs). Nothing here forms cycles.
    paused = gc.isenabled()
    gc.disable()
    if memo is not None:
        memo.start()
    try:
        result = _Cycle(with_away(snapshot), memo).run()
    finally:
        if paused:
            gc.enable()
    if memo is not None:
        memo.done()
    return result
