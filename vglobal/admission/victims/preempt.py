"""Preemption inside a queue (DESIGN 5.3 step 6; Volcano's preempt action with the gang and
priority plugins' victim rules).

A pending job that its queue's limits or the clusters' free capacity keep out may take the place of
running pods of LOWER PriorityClass value in the same leaf queue, on one cluster:
- never for a job whose PreemptionPolicy is Never, never a pod annotated preemptable "false", never
  a run younger than --reclaim-min-runtime;
- victims in order: lowest priority, then newest, then uid; first the surplus pods of elastic jobs
  (placed pods beyond minAvailable, newest pod first), so no victim gang drops below minAvailable;
- only if that is not enough, whole jobs in the same order (they are stopped and re-queued).
Enough is: the queue path's limits hold the job once the victims' charge is gone, and its gang packs
onto the cluster's free capacity plus what the victims hold there (a hard-topology gang: inside one
HyperNode its tier allows, with victims from that HyperNode only; preempt_topology.py). The job is
then admitted there in the same cycle (Volcano pipelines the preemptor onto the freed nodes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter

from vglobal.admission.explain import preempting_reason
from vglobal.admission.fit.gang import PreparedGang, pack
from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.fit.node_mask import EVERYWHERE, Usable
from vglobal.admission.fit.placement import Clusters
from vglobal.admission.fit.topology import HyperNodeRows
from vglobal.admission.prepare import Job
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import Eviction, Reclaim, RunningJob, RunningPod, Snapshot, job_ref
from vglobal.admission.victims.ask import Ask
from vglobal.admission.victims.preempt_topology import domains, hard_limit, victim_room, within
from vglobal.model.resources import ResourceVector

NEVER = "Never"
# Plans per cycle (each packs the gang once per victim it tries); later ones wait a cycle.
MAX_PREEMPT_PLANS = 16
# Candidate clusters searched per plan, the ones holding the most victims first.
CLUSTERS_PER_PLAN = 3


@dataclass(slots=True)
class VictimPod:
    uid: str
    node: int  # row in its cluster's free matrix; -1 = a node admission does not know
    req: list[int]


@dataclass(slots=True)
class Victim:
    job: RunningJob
    pods: list[VictimPod]  # newest first (by uid, which carries the pod's index)
    surplus: list[VictimPod]  # those that may go one by one: preemptable, beyond minAvailable
    whole_ok: bool  # every pod preemptable: the whole job may go
    charge: list[int]  # what its queue is charged for it


@dataclass(slots=True)
class Plan:
    cluster: int
    freed_rows: dict[int, list[int]]  # node row -> what the victims hold there
    freed: list[int]  # queue charge the victims give back
    pods: dict[str, list[str]] = field(default_factory=dict)  # victim uid -> pod uids (evicted)
    whole: list[str] = field(default_factory=list)  # victim uids taken whole (re-queued)
    closed: list[int] = field(default_factory=list)  # node rows the gang may not use (node_mask.py)


def victim_order(jobs: list[RunningJob]) -> list[RunningJob]:
    """Lowest priority, away runs (placement stages), newest, uid (stable sorts, last key first)."""
    out = sorted(jobs, key=attrgetter("uid"))
    out.sort(key=attrgetter("created"), reverse=True)
    out.sort(key=attrgetter("away"), reverse=True)
    out.sort(key=attrgetter("priority"))
    return out


# A leaf's running jobs in victim order: victim_order, or a memo of it (memo.py).
VictimOrder = Callable[[list[RunningJob]], list[RunningJob]]


class Preemptions:
    """A cycle's preemption plans: who may preempt, and the victims planned so far."""

    def __init__(
        self,
        snapshot: Snapshot,
        tree: QueueTree,
        clusters: Clusters,
        index: ResourceIndex,
        order: VictimOrder = victim_order,
    ) -> None:
        self.tree, self.clusters, self.index = tree, clusters, index
        min_runtime = snapshot.policy.reclaim_min_runtime
        protected = snapshot.now - min_runtime if min_runtime > 0 else None
        by_leaf: dict[int, list[RunningJob]] = {}
        for job in snapshot.running:
            i = tree.idx.get(job.queue, -1)
            if i < 0 or job.cluster not in clusters.col:
                continue
            if protected is not None and job.running_since is not None and job.running_since > protected:
                continue  # ran for less than --reclaim-min-runtime
            by_leaf.setdefault(i, []).append(job)
        self._jobs = {i: order(jobs) for i, jobs in by_leaf.items()}
        # Per leaf, the lowest priority of a possible victim: a job of no higher priority never
        # preempts, which the hot loop checks with one lookup.
        self.lowest = {i: jobs[0].priority for i, jobs in self._jobs.items()}
        self.plans = 0
        self.taken: set[str] = set()  # victims planned this cycle (job and pod uids)
        self.spared: frozenset[str] = frozenset()  # the running children of the HyperJob being decided
        # (leaf, priority, gang tag, key): a key tells apart jobs whose masks differ (anti-affinity)
        self._failed: set[tuple[int, int, str, str]] = set()
        self._victims: dict[tuple[str, int], Victim] = {}
        self._rows: dict[int, HyperNodeRows] = {}

    def may(self, leaf: int, priority: int, policy: str, gang: PreparedGang, key: str = "") -> bool:
        low = self.lowest.get(leaf)
        return (
            low is not None
            and low < priority
            and policy != NEVER
            and self.plans < MAX_PREEMPT_PLANS
            and (leaf, priority, gang.tag, key) not in self._failed
        )

    def _victim(self, job: RunningJob, c: int, priority: int) -> Victim:
        got = self._victims.get((job.uid, priority))
        if got is None:
            got = self._victims[(job.uid, priority)] = victim_of(
                job, self.clusters.node_col[c], self.index.known_row, priority
            )
        return got

    def plan(self, ask: Ask, cand: Sequence[int], need: list[int]) -> Plan | None:
        """Victims of the job's queue on one cluster of `cand` that make room for its gang on the
        nodes its mask leaves it and free `need` of the queue's charge (what its limits are
        exceeded by); None if no cluster works."""
        leaf, priority, gang = ask.job.leaf, ask.job.snap.priority, ask.job.gang
        self.plans += 1
        names = self.clusters.names
        wanted = {names[c]: c for c in cand}
        per_cluster: dict[int, list[RunningJob]] = {}
        for job in self._jobs.get(leaf, ()):
            if job.priority >= priority:
                break  # in priority order: the rest are no lower
            c = wanted.get(job.cluster)
            if c is not None and job.uid not in self.taken and job.uid not in self.spared:
                per_cluster.setdefault(c, []).append(job)
        ranked = sorted(per_cluster, key=lambda c: (-len(per_cluster[c]), c))[:CLUSTERS_PER_PLAN]
        for c in ranked:
            got = self._plan_cluster(c, per_cluster[c], ask, need)
            if got is not None:
                add = self.clusters.ledger.add
                add(self.taken, got.pods)
                add(self.taken, got.whole)
                return got
        if not self.clusters.ledger.open:  # a HyperJob's failures are its own (its children's room)
            self._failed.add((leaf, priority, gang.tag, ask.key))
        return None

    def _plan_cluster(self, c: int, jobs: list[RunningJob], ask: Ask, need: list[int]) -> Plan | None:
        victims = [self._victim(j, c, ask.job.snap.priority) for j in jobs]
        usable = ask.mask(c)
        hard, limit = hard_limit(ask.job.snap.network_topology)
        if not hard:
            return self._plan_in(c, victims, ask, need, usable)
        # a hard-topology gang: victims inside one HyperNode at a time (preempt_topology.py)
        free = self.clusters.free(c)
        room = victim_room(free.shape[0], self.index.size, [(p.node, p.req) for v in victims for p in v.pods])
        best: tuple[tuple[int, int], Plan] | None = None
        for rows in domains(self._hypernodes(c), limit, free, room, ask.job.gang):
            got = self._plan_in(c, victims, ask, need, within(usable, rows, free.shape[0]))
            if got is not None:
                cost = (len(got.whole) + len(got.pods), sum(map(len, got.pods.values())))
                if best is None or cost < best[0]:
                    best = (cost, got)
        return None if best is None else best[1]

    def _hypernodes(self, c: int) -> HyperNodeRows:
        got = self._rows.get(c)
        if got is None:
            got = self._rows[c] = HyperNodeRows(self.clusters.snaps[c].hypernodes, self.clusters.node_col[c])
        return got

    def _plan_in(
        self, c: int, victims: list[Victim], ask: Ask, need: list[int], usable: Usable
    ) -> Plan | None:
        """Victims among ``victims`` whose pods sit on rows ``usable`` leaves the gang."""
        gang, cards = ask.job.gang, ask.cards
        check = None if cards is None else partial(cards, c)
        enough = Fit(self.clusters.free(c), gang, need, usable, check)
        steps: list[Step] = []
        found = False
        for v in victims:  # surplus pods of elastic victims first, one at a time
            for pod in v.surplus:
                if not usable.admits(pod.node):
                    continue  # frees room the gang may not use
                steps.append(Step(v.job.uid, [pod], pod.req, whole=False))
                if enough(steps):
                    found = True
                    break
            if found:
                break
        if not found:
            for v in victims:  # then whole jobs: all their pods and their whole charge
                if not v.whole_ok or not any(usable.admits(p.node) for p in v.pods):
                    continue
                steps = [st for st in steps if st.victim != v.job.uid]
                steps.append(Step(v.job.uid, v.pods, v.charge, whole=True))
                if enough(steps):
                    found = True
                    break
        if not found:
            return None
        return enough.plan(c, trim(steps, enough), self.index.size)


def preemption_evictions(
    job: Job, plan: Plan, tree: QueueTree, clusters: Sequence[str], name: Callable[[str], str] = str
) -> tuple[list[Eviction], list[Reclaim], str]:
    """The plan's evictions and whole victims, each saying why, and the sentence of the
    preemptor's admission (naming its victims and cluster; ``name`` words a job's uid)."""
    cluster, uid, queue = clusters[plan.cluster], job.snap.uid, tree.names[job.leaf]
    why = f"preempted in queue {queue} for job {job_ref(job.snap)} of priority {job.snap.priority}"
    evictions, whole, parts = [], [], []
    for victim, pods in plan.pods.items():
        evictions.append(Eviction(victim, cluster, tuple(pods), uid, why))
        parts.append(f"{len(pods)} pod{'s' if len(pods) != 1 else ''} of {name(victim)}")
    for victim in plan.whole:
        whole.append(Reclaim(victim, cluster, uid, why, preempted=True))
        parts.append(f"job {name(victim)}")
    return evictions, whole, preempting_reason(queue, cluster, parts)


def victim_of(
    job: RunningJob, node_col: Mapping[str, int], row: Callable[[ResourceVector], list[int]], priority: int
) -> Victim:
    """A running job as victim pods: newest first, which of them may go one by one (preemptable,
    of lower priority than `priority`, beyond minAvailable) and whether all of it may go."""
    if job.pods:
        pods = [VictimPod(p.uid, node_col.get(p.node, -1), row(p.request)) for p in job.pods]
        order = sorted(range(len(pods)), key=lambda k: _pod_key(pods[k].uid), reverse=True)
        pods = [pods[k] for k in order]
        # A pod of its own priority (a task's priorityClassName) no lower than the preemptor's is
        # no victim either.
        keep = [_may_go(job.pods[k], priority) for k in order]
        spare = max(len(pods) - job.min_available, 0)
        surplus = [] if job.whole_only else [p for p, ok in zip(pods, keep, strict=True) if ok][:spare]
        whole_ok = all(keep) and not job.pinned and not job.holds_pinned
    else:  # known per node only: it can go whole, unless a pod of it may never go
        pods = [VictimPod(f"{job.uid}@{n}", node_col.get(n, -1), row(v)) for n, v in job.placements.items()]
        surplus, whole_ok = [], not job.pinned and not job.holds_pinned
    return Victim(job, pods, surplus, whole_ok, row(job.request))


class Fit:
    """Whether victims are enough: they give back at least `need` of the queue charge, and the gang
    packs onto the cluster's free capacity (`base`, per node row) plus what they hold there, on
    the rows `usable` leaves it once they are gone (and, with `cards`, onto the GPU cards with
    theirs back)."""

    def __init__(
        self,
        base: IntArray,
        gang: PreparedGang,
        need: list[int],
        usable: Usable = EVERYWHERE,
        cards: Callable[[IntArray, Iterable[str]], bool] | None = None,
    ) -> None:
        self.base, self.gang, self.need, self.usable, self.cards = base, gang, need, usable, cards

    def __call__(self, chosen: Sequence[Step]) -> bool:
        freed = [0] * len(self.need)
        free = self.base.copy()
        for st in chosen:
            for r, x in enumerate(st.charge):
                freed[r] += x
            for pod in st.pods:
                if pod.node >= 0:
                    free[pod.node] += pod.req
        if any(f < n for f, n in zip(freed, self.need, strict=True)):
            return False
        if not self.usable.everywhere:
            free = self.usable.apply(free, _gone(chosen))
        if (free.sum(axis=0) < self.gang.total).any():
            return False
        if pack(free, self.gang.shapes)[1] is None:
            return False
        if self.cards is None:
            return True
        return self.cards(
            free, [k for st in chosen for k in ([st.victim] if st.whole else [p.uid for p in st.pods])]
        )

    def plan(self, c: int, steps: Sequence[Step], size: int) -> Plan:
        """The plan of the chosen steps, with the rows the gang may still not use."""
        out = plan_of(c, steps, size)
        out.closed = self.usable.closed(_gone(steps))
        return out


def _gone(steps: Sequence[Step]) -> set[str]:
    return {p.uid for st in steps for p in st.pods}


def trim(steps: list[Step], enough: Fit) -> list[Step]:
    """Drop the victims taken early that later ones made needless (Volcano commits only the
    evictions of the node where the preemptor fits)."""
    k = 0
    while k < len(steps) and len(steps) > 1:
        rest = steps[:k] + steps[k + 1 :]
        if enough(rest):
            steps = rest
        else:
            k += 1
    return steps


def plan_of(c: int, steps: Sequence[Step], size: int) -> Plan:
    plan = Plan(c, {}, [0] * size)
    for st in steps:
        for r, x in enumerate(st.charge):
            plan.freed[r] += x
        for pod in st.pods:
            if pod.node >= 0:
                acc = plan.freed_rows.setdefault(pod.node, [0] * size)
                for r, x in enumerate(pod.req):
                    acc[r] += x
        if st.whole:
            plan.whole.append(st.victim)
        else:
            plan.pods.setdefault(st.victim, []).extend(p.uid for p in st.pods)
    return plan


@dataclass(slots=True)
class Step:
    victim: str
    pods: list[VictimPod]
    charge: list[int]  # queue charge it gives back
    whole: bool


def _may_go(pod: RunningPod, priority: int) -> bool:
    own = pod.priority
    return pod.preemptable and (own is None or own < priority)


def _pod_key(uid: str) -> tuple[str, int]:
    """The pod's name (an agent's pod uid is job/generation/name/incarnation) and its index: pod 10
    is newer than pod 9."""
    parts = uid.split("/")
    name = parts[2] if len(parts) == 4 else uid
    head, _, tail = name.rpartition("-")
    return (head, int(tail) if tail.isdigit() else -1)
