"""Reclaim of single pods across queues (Volcano's reclaim action with the capacity, proportion and
gang plugins' Reclaimable rules), for when no whole victim job may go (reclaim.py).

A victim pod runs on one candidate cluster in another leaf queue that is reclaimable, is annotated
preemptable, is a surplus pod of its job (beyond minAvailable, so no victim gang drops below it), ran
for at least --reclaim-min-runtime and asks for a resource the reclaimer asks for. Its queue may
lose it while the queue keeps its guarantee and, counting the pods it already gives up, its
allocation is above its deserved on a resource the pod uses (or its deserved names none of them).
Victims go by queue (siblings of the reclaimer first; then lowest queue priority, highest share),
then lowest job priority, newest job, newest pod; they are taken until the gang packs onto the
cluster's free capacity plus what they hold, and those that later ones made needless are dropped.

Under the worth rule (worth.py) the same rule as for whole jobs: a queue it protects gives no pods,
a run that started while the reclaimer waited gives none, victims within a queue go in its order
(cheapest, newest first), and a pod is taken only while the lost work of all taken (each its job's
run since its last checkpoint, times the pod's dominant share) stays within the reclaimer's gain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from operator import itemgetter

from vglobal.admission.explain import reclaiming_pods_reason, victim_reason
from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.fit.node_mask import Usable
from vglobal.admission.fit.placement import Clusters
from vglobal.admission.prepare import Job
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import Eviction, Reclaim, RunningJob, Snapshot, job_ref
from vglobal.admission.victims.ask import Ask
from vglobal.admission.victims.losable import may_lose, set_deserved
from vglobal.admission.victims.preempt import Fit, Plan, Step, VictimPod, trim, victim_of
from vglobal.admission.victims.worth import Worth

# Reclaim asks nothing of priorities: any preemptable pod may go.
_ANY_PRIORITY = 1 << 62


@dataclass(frozen=True, slots=True)
class PodPlan:
    plan: Plan
    freed: dict[int, list[int]]  # victim leaf -> the charge it gives back
    queue_of: dict[str, int]  # victim job uid -> its leaf


@dataclass(slots=True)
class _Candidate:
    leaf: int
    job: str
    pods: list[VictimPod]
    charge: list[int]
    whole: bool  # the whole job (re-queued), not surplus pods of it


class PodReclaims:
    def __init__(
        self,
        snapshot: Snapshot,
        tree: QueueTree,
        clusters: Clusters,
        index: ResourceIndex,
        slots: int,
        taken: set[str] | None = None,
        worth: Worth | None = None,
    ) -> None:
        """`slots`: the column of pod slots (-1 if none), which no queue is short of. `taken`: job
        and pod uids other planners already took this cycle (shared, and added to). `worth`: the
        worth rule (see module), None for Volcano's alone."""
        self.tree, self.clusters, self.index, self.slots = tree, clusters, index, slots
        self.worth = worth
        self._running: dict[str, RunningJob] = {}
        self._des = set_deserved(tree, index)
        min_runtime = snapshot.policy.reclaim_min_runtime
        protected = snapshot.now - min_runtime if min_runtime > 0 else None
        self._jobs: dict[str, list[RunningJob]] = {}  # per cluster, jobs with pods that may go
        for job in snapshot.running:
            leaf = tree.idx.get(job.queue, -1)
            if leaf < 0 or not tree.is_leaf[leaf] or not tree.reclaimable[leaf] or not job.pods:
                continue
            if protected is not None and job.running_since is not None and job.running_since > protected:
                continue
            if worth is not None and not worth.may_lose(leaf):
                continue
            if job.cluster in clusters.col:
                self._jobs.setdefault(job.cluster, []).append(job)
                self._running[job.uid] = job
        self.taken: set[str] = set() if taken is None else taken  # job and pod uids planned this cycle
        self._given: dict[int, list[int]] = {}  # per leaf, charge given up by earlier plans

    def plan(
        self, ask: Ask, cand: Sequence[int], need: list[int], within: int, short: list[bool]
    ) -> PodPlan | None:
        """Victim pods on one cluster of `cand` that let the job's gang fit there (on the nodes its
        mask leaves it) and give back `need` of the charge of queue `within` (0: root, no need), all
        from below `within`; None if none. `short`: the resources the reclaim is for (may_lose)."""
        for c in cand:
            got = self._plan_cluster(c, ask, need, within, short)
            if got is not None:
                ledger = self.clusters.ledger
                for pods in got.plan.pods.values():
                    ledger.add(self.taken, pods)
                ledger.add(self.taken, got.plan.whole)
                for q, freed in got.freed.items():
                    given = self._given.get(q) or [0] * self.index.size
                    ledger.put(self._given, q, [g + f for g, f in zip(given, freed, strict=True)])
                return got
        return None

    def _candidates(
        self, c: int, leaf: int, req: list[int], within: int, usable: Usable, waiting_since: float
    ) -> list[_Candidate]:
        """Surplus pods one by one, in victim order; then whole jobs in the same order; only those
        on nodes the gang may use."""
        tree, slots, worth = self.tree, self.slots, self.worth
        asks = [r for r, x in enumerate(req) if x > 0 and r != slots]
        jobs: list[tuple[tuple[object, ...], int, RunningJob]] = []
        for job in self._jobs.get(self.clusters.names[c], ()):
            q = tree.idx[job.queue]
            if q == leaf or (within and within not in tree.path[q]):
                continue
            if worth is None:
                key: tuple[object, ...] = (job.priority, not job.away, -job.created, job.uid)
            elif worth.started_since(job, waiting_since):
                continue  # admitted while the reclaimer waited: taking it back undoes that cycle
            else:
                key = worth.order_key(job)
            jobs.append(((self._queue_key(q, leaf), *key), q, job))
        jobs.sort(key=itemgetter(0))
        pods, wholes = [], []
        node_col, row = self.clusters.node_col[c], self.index.known_row
        for _, q, job in jobs:
            if job.uid in self.taken:
                continue  # another plan takes it whole
            v = victim_of(job, node_col, row, _ANY_PRIORITY)
            for pod in v.surplus:
                if (
                    pod.node >= 0
                    and usable.admits(pod.node)
                    and pod.uid not in self.taken
                    and any(pod.req[r] > 0 for r in asks)
                ):
                    pods.append(_Candidate(q, job.uid, [pod], pod.req, whole=False))
            if (
                v.whole_ok
                and len(v.surplus) < len(v.pods)
                and not any(p.uid in self.taken for p in v.pods)
                and any(usable.admits(p.node) for p in v.pods)
            ):
                wholes.append(_Candidate(q, job.uid, v.pods, v.charge, whole=True))
        return pods + wholes

    def _queue_key(self, q: int, leaf: int) -> tuple[int, int, float, int, int]:
        """Victim queues first: deepest common ancestor with the reclaimer, lowest priority, highest
        share, then the later in queue order (newest, last by name)."""
        tree = self.tree
        shared = len(set(tree.path[q]) & set(tree.path[leaf]))
        alloc, des = tree.alloc[q], self._des[q]
        share = max((a / d for a, d in zip(alloc, des, strict=True) if d > 0), default=1.0)
        return (-shared, tree.priority[q], -share, -tree.created[q], -q)

    def _plan_cluster(
        self, c: int, ask: Ask, need: list[int], within: int, short: list[bool]
    ) -> PodPlan | None:
        leaf, req, gang, usable, cards = ask.job.leaf, ask.job.req, ask.job.gang, ask.mask(c), ask.cards
        tree, size = self.tree, self.index.size
        check = None if cards is None else partial(cards, c)
        enough = Fit(self.clusters.free(c), gang, need, usable, check)
        alloc: dict[int, list[int]] = {}
        steps: list[Step] = []
        queue_of: dict[str, int] = {}
        gain = None if self.worth is None else self.worth.gain(leaf, req)
        for cand in self._candidates(c, leaf, req, within, usable, ask.job.snap.waiting_since):
            step = Step(cand.job, cand.pods, cand.charge, cand.whole)
            if gain is not None and self._lost([*steps, step]) > gain:
                continue  # not worth its lost work; a cheaper one later may be
            q = cand.leaf
            left = alloc.get(q)
            if left is None:
                given = self._given.get(q, [0] * size)
                left = alloc[q] = [a - g for a, g in zip(tree.alloc[q], given, strict=True)]
            if cand.whole:  # its surplus pods, taken one by one above, are in the whole job
                kept = [st for st in steps if st.victim != cand.job]
                for st in steps:
                    if st.victim == cand.job:
                        left = [a + x for a, x in zip(left, st.charge, strict=True)]
                steps = kept
            after = self._lose(q, left, cand, short)
            if after is None:
                alloc[q] = left
                continue
            alloc[q] = after
            steps.append(Step(cand.job, cand.pods, cand.charge, whole=cand.whole))
            queue_of[cand.job] = q
            if enough(steps):
                steps = trim(steps, enough)
                freed: dict[int, list[int]] = {}
                for st in steps:
                    acc = freed.setdefault(queue_of[st.victim], [0] * size)
                    freed[queue_of[st.victim]] = [a + x for a, x in zip(acc, st.charge, strict=True)]
                kept_of = {u: queue_of[u] for u in {st.victim for st in steps}}
                return PodPlan(enough.plan(c, steps, size), freed, kept_of)
        return None

    def _lost(self, steps: Sequence[Step]) -> float:
        """The worth rule's lost work of the steps (a whole job's step holds its surplus pods')."""
        assert self.worth is not None
        whole = {st.victim for st in steps if st.whole}
        return sum(
            self.worth.part_cost(self._running[st.victim], st.charge)
            for st in steps
            if st.whole or st.victim not in whole
        )

    def _lose(self, q: int, left: list[int], cand: _Candidate, short: list[bool]) -> list[int] | None:
        """The queue's allocation without the candidate, or None if it may not lose it: each of its
        pods in turn by Volcano's rule (may_lose), a whole job's too, as Volcano's gang reclaim
        checks a whole victim's tasks one by one."""
        des, guarantee, slots = self._des[q], self.tree.guarantee[q], self.slots
        after = left
        for pod in cand.pods:
            if not may_lose(after, pod.req, des, guarantee, slots, short):
                return None
            after = [a - x for a, x in zip(after, pod.req, strict=True)]
        if not cand.whole:
            return after
        return [a - x for a, x in zip(left, cand.charge, strict=True)]  # what its queue is charged


def reclaim_evictions(
    got: PodPlan, job: Job, tree: QueueTree, clusters: Sequence[str], name: Callable[[str], str] = str
) -> tuple[list[Eviction], list[Reclaim], str]:
    """The plan's evictions and whole victims, each saying why, and the sentence of the
    reclaimer's admission (``name`` words a job's uid)."""
    cluster, uid, queue = clusters[got.plan.cluster], job.snap.uid, tree.names[job.leaf]
    evictions, whole, parts = [], [], []
    for victim, pods in got.plan.pods.items():
        why = victim_reason(tree.names[got.queue_of[victim]], job_ref(job.snap), queue)
        evictions.append(Eviction(victim, cluster, tuple(pods), uid, why, reclaimed=True))
        parts.append(f"{len(pods)} pod{'s' if len(pods) != 1 else ''} of {name(victim)}")
    for victim in got.plan.whole:
        why = victim_reason(tree.names[got.queue_of[victim]], job_ref(job.snap), queue)
        whole.append(Reclaim(victim, cluster, uid, why))
        parts.append(f"job {name(victim)}")
    return evictions, whole, reclaiming_pods_reason(queue, cluster, parts)
