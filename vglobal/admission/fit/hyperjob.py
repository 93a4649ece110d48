"""A HyperJob's children admitted as one gang across clusters, and the auto split of accelerators.

Rules (the README's "HyperJobs" says the same):
- One decision per HyperJob and cycle: its pending children are admitted together or none is.
  Until ``minAvailable`` children run (default: all), every pending child must be placed at once;
  once that many are admitted, the rest follow one by one as room allows.
- Each child's gang must fit its own cluster exactly as a lone job's would (fit.py: the queue's
  node groups and their limits, pod anti-affinity, GPU cards, partitions and network topology).
- Children go to different clusters: a child takes a candidate cluster no sibling holds (running
  or placed in this decision), chosen as a lone job's would be among them. Only when no such
  cluster can hold it does it share one with a sibling (its ``clusterNames`` name fewer clusters
  than there are children, or the others lack room), packed into what its siblings left there.
- The whole HyperJob fits its queue's limits at once (the sum of the children's requests) and is
  charged to the queue as one job; HyperJobs are decided before the cycle's other jobs, highest
  priority first, then oldest.
- A HyperJob that waits says which child fits no cluster, and what the closest cluster had.
- One that free capacity does not hold is decided again with victims per child, as lone jobs
  take them (preemption in its queue, reclaim across queues: hyperjob_victims.py). Children left
  over once minAvailable are admitted are decided again so too; when their queue's limits refuse
  them, they wait saying so, and the children admitted before them stay admitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from vglobal.admission.explain import budget_wait, queue_wait
from vglobal.admission.fit.gang_fit import GangFit, subset
from vglobal.admission.fit.topology import lowest_tier
from vglobal.admission.ledger import Ledger
from vglobal.admission.prepare import Job, Leaf, Prepared
from vglobal.admission.share.checks import Checks
from vglobal.admission.snapshot import Admit, ClusterSnap, PendingJob, RunningJob, Wait
from vglobal.admission.victims.hyperjob_victims import ChildRoom
from vglobal.model.hyperjob import HyperJob
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import ResourceVector

__all__ = [
    "Group",
    "SplitError",
    "admit_groups",
    "auto_shares",
    "groups_of",
    "split_accelerators",
    "split_over",
]


@dataclass(slots=True)
class Group:
    key: str
    queue: str
    min_available: int
    pending: list[PendingJob]  # in child order
    running: list[str]  # clusters its admitted children hold, one per child
    siblings: list[str] = field(default_factory=list)  # those children's uids: never victims
    left_over: bool = False  # the children left over once minAvailable are admitted this cycle


def groups_of(pending: Iterable[PendingJob], running: Iterable[RunningJob]) -> list[Group]:
    """The HyperJobs with a pending child, highest priority first, then oldest, then by name."""
    groups: dict[str, Group] = {}
    for job in pending:
        ref = job.group
        if ref is None:
            continue
        g = groups.get(ref.key)
        if g is None:
            g = groups[ref.key] = Group(ref.key, job.queue, ref.min_available, [], [])
        g.pending.append(job)
    if not groups:
        return []
    for run in running:
        if run.group is not None and (g := groups.get(run.group)) is not None:
            g.running.append(run.cluster)
            g.siblings.append(run.uid)
    for g in groups.values():
        g.pending.sort(key=lambda j: j.group.index if j.group is not None else 0)
    return sorted(
        groups.values(),
        key=lambda g: (-max(j.priority for j in g.pending), min(j.created for j in g.pending), g.key),
    )


class _Decision:
    """One HyperJob's children placed one after the other through the lone-job fit (fit.py), each
    committed at the decision's checkpoint so that the next sees what its siblings took."""

    def __init__(self, fit: GangFit, taken: Iterable[str], room: ChildRoom | None = None) -> None:
        self.fit, self.clusters, self.room = fit, fit.clusters, room
        # Clusters its siblings hold: running there, or placed by this decision.
        self.taken = {self.clusters.col[c] for c in taken if c in self.clusters.col}

    def _within(self, job: Job, ids: Sequence[int]) -> Job:
        """The child with only these of its candidate clusters."""
        return job if len(ids) == len(job.cand.ids) else replace(job, cand=subset(job.cand, ids))

    def place(self, job: Job) -> int | None:
        """The cluster the child went to (a trial commit), or None. A cluster no sibling holds
        first; only when none holds it does it share one with a sibling."""
        ids, room = job.cand.ids, self.room
        own = [c for c in ids if c not in self.taken]
        shared = [c for c in ids if c in self.taken]
        cards = self.fit.devices.packer(job.snap)  # None unless it asks for GPU cards
        c = None
        for among in (own, shared):  # with victims (room), a cluster of its own before a shared one
            if not among:
                continue
            if room is not None and room.owes():  # victims of its queue must give back its excess
                c = room.place(job, among, owed=True)
            if c is None:
                c = self.fit.place(self._within(job, among), {}, cards)
            if c is None and room is not None:
                c = room.place(job, among)
            if c is not None:
                break
        if c is not None:
            self.taken.add(c)
        return c

    def why_not(self, job: Job) -> str:
        """Which child fits no cluster, and what came closest among those its siblings leave (else
        among theirs, beside them). Asked before a rollback: the trial shows what they took."""
        clusters, ids = self.clusters, job.cand.ids
        free = [c for c in ids if c not in self.taken]
        taken = [c for c in ids if c in self.taken]
        held = sorted(clusters.names[c] for c in taken)
        if free or not held:
            best, _ = self.fit.why_not(self._within(job, free))
        else:
            beside, _ = self.fit.why_not(self._within(job, taken))
            best = f"no candidate cluster is free of its siblings; beside them, {beside}"
        text = f"child {job.snap.name} ({clusters.describe(job.gang)}) fits no cluster: {best}"
        if held:
            text += f"; its siblings hold {', '.join(held)}"
        return text


def _as_job(prep: Prepared, jobs: Sequence[Job], leaf: int, serial: int) -> Job:
    """The children ``jobs`` as one job of admission's form: their summed request, for the queue's
    checks and its charge (a HyperJob counts as one job of its queue)."""
    req = [0] * prep.index.size
    for j in jobs:
        for r, v in enumerate(j.req):
            req[r] += v
    dims = tuple(r for r, v in enumerate(req) if v)
    first = jobs[0]
    return Job(first.snap, leaf, req, -serial, dims, first.gang, first.cand)


def admit_groups(
    groups: Sequence[Group], fit: GangFit, checks: Checks, budget: int = 0, room: ChildRoom | None = None
) -> None:
    """Decide every HyperJob's pending children, in the cycle's ledger: Admit for each placed,
    Wait for the rest. Once ``budget`` admissions are made (0: no limit) the HyperJobs left wait a
    turn. With ``room``, a HyperJob that free capacity does not hold is decided again with victims
    (hyperjob_victims.py)."""
    prep, ledger = fit.prep, fit.ledger
    tree = prep.tree
    hyperjobs = _HyperJobs(fit, checks, room)
    for serial, group in enumerate(groups, start=1):
        if budget and len(ledger.admitted) >= budget:
            _wait(ledger, group.pending, budget_wait(budget))
            continue
        i = tree.idx.get(group.queue, -1)
        if i < 0 or not tree.is_leaf[i] or not tree.open[i]:
            _wait(ledger, group.pending, queue_wait(tree, group.queue))
            continue
        jobs = [prep.job_of(j, i) for j in group.pending]
        got = hyperjobs.decide(group, jobs, i, serial, None)
        if room is not None:
            # Again with victims: the whole HyperJob when it waits, else the children left over.
            decisions = ledger.decisions
            rest = jobs if got is not None else [j for j in jobs if type(decisions[j.snap.uid]) is Wait]
            whole = _as_job(prep, rest, i, serial) if rest else None
            if whole is not None and room.may(rest, whole):
                room.start(whole, group.siblings)
                again = group if got is not None else _following(group, rest, jobs, decisions)
                refused = hyperjobs.decide(again, rest, i, serial, room)
                if refused is None:
                    continue
                if got is None:
                    # Those left over wait, saying why victims may not make their room (their
                    # try is rolled back); the children admitted before them stay admitted.
                    _wait(ledger, again.pending, refused)
                    continue
                got = Wait(got.kind, f"{got.reason}; {_NO_VICTIMS}")
        if got is not None:
            _wait(ledger, group.pending, got)


def _wait(ledger: Ledger, jobs: Iterable[PendingJob], wait: Wait) -> None:
    for j in jobs:
        ledger.decide(j.uid, wait)


def _following(
    group: Group,
    rest: Sequence[Job],
    jobs: Sequence[Job],
    decisions: Mapping[str, Admit | Wait],
) -> Group:
    """The children left over once enough are admitted, as a group that needs none of them; its
    siblings admitted this cycle hold their clusters."""
    held = [d.cluster for j in jobs if type(d := decisions[j.snap.uid]) is Admit]
    pending = [j.snap for j in rest]
    return Group(group.key, group.queue, 0, pending, [*group.running, *held], group.siblings, left_over=True)


_NO_VICTIMS = (
    "nor do lower-priority pods of its queue or surplus pods of queues above their deserved share "
    "make room for every child it needs at once"
)


@dataclass(slots=True)
class _HyperJobs:
    """What a HyperJob's decision uses: the gang fit, the queue checks and, when victims may make
    room, the child room; it writes what it decides into the cycle's ledger."""

    fit: GangFit
    checks: Checks
    room: ChildRoom | None

    def decide(
        self, group: Group, jobs: Sequence[Job], i: int, serial: int, room: ChildRoom | None
    ) -> Wait | None:
        """One try at the HyperJob's decision, with victims if ``room``: None when made (its
        decisions written), else why every child waits (everything it tried rolled back)."""
        fit, checks, ledger = self.fit, self.checks, self.fit.ledger
        names = fit.clusters.names
        mark = ledger.checkpoint()
        decision = _Decision(fit, group.running, room)
        need = max(group.min_available - len(group.running), 0)
        placed: list[tuple[Job, int]] = []
        misses: list[Job] = []
        for job in jobs:
            c = decision.place(job)
            if c is None:
                misses.append(job)
            else:
                placed.append((job, c))
        refused: Wait | None = None
        # A child left over once enough are admitted waits alone; else every child waits with it.
        head = f"HyperJob {group.key} " + ("runs without it" if group.left_over else "waits whole")
        if need and misses and len(placed) < need:
            text = decision.why_not(misses[0])  # before the rollback: it shows what they took
            together = f"({need} children must start together)"
            refused = Wait(WaitKind.NoFit, f"HyperJob {group.key} waits whole {together}: {text}")
        elif room is not None and room.owes():
            limits = "its queue's limits hold"
            refused = Wait(WaitKind.Capability, f"{head}: {limits}")
        elif placed:
            as_job = _as_job(fit.prep, [j for j, _ in placed], i, serial)
            if room is not None:
                room.give_back()
            guarded = checks.guarded and checks.guarantees(as_job)
            wait = checks.capability(as_job, Leaf(i)) or guarded or None
            if wait is not None:
                refused = Wait(wait.kind, f"{head}: {wait.reason}")
        if refused is not None:
            ledger.rollback(mark)
            if room is not None:
                room.finish()
            return refused
        if placed:
            checks.charge(as_job)
            made = room.admissions(group.key) if room is not None else {}
            for job, c in placed:
                ledger.admit(job.snap.uid, made.get(job.snap.uid) or Admit(names[c]))
        elif room is not None:
            room.finish()  # nothing placed: no victim taken
        ledger.keep(mark)  # (with nothing placed: the cards of gangs placed earlier, taken meanwhile)
        for job in misses:
            text = f"HyperJob {group.key} runs without it until room frees: {decision.why_not(job)}"
            ledger.decide(job.snap.uid, Wait(WaitKind.NoFit, text))
        return None


# For a cluster and a share of accelerators: the lowest network tier at which one HyperNode of it
# holds the share's pods (None: none does, or it has no HyperNodes).
ShareTier = Callable[[str, int], "int | None"]
_NO_TIER = 1 << 30  # ranks after every tier


def split_accelerators(
    total: int,
    per_pod: int,
    free: Mapping[str, int],
    max_domains: int | None,
    tier: ShareTier | None = None,
) -> list[tuple[str, int]] | None:
    """``total`` accelerators over the fewest clusters, up to ``max_domains`` of them: each step
    the cluster that takes the biggest share (what it has free in whole pods, at most what is
    left) and, among those that take as much, the one whose HyperNodes hold that share at the
    lowest network tier (``tier``), then the one with the most free, then by name. None when they
    cannot hold it all."""
    if total <= 0 or per_pod <= 0:
        return None
    left = -(-total // per_pod) * per_pod  # whole pods
    out: list[tuple[str, int]] = []
    rest = {name: amount // per_pod * per_pod for name, amount in free.items()}
    while left > 0 and (max_domains is None or len(out) < max_domains):
        shares = {name: min(amount, left) for name, amount in rest.items() if amount > 0}
        if not shares:
            break
        biggest = max(shares.values())
        tied = sorted(name for name, share in shares.items() if share == biggest)
        if len(tied) > 1 and tier is not None:
            tiers = {name: tier(name, biggest) for name in tied}
            tied.sort(key=lambda n: (_NO_TIER if (t := tiers[n]) is None else t, -free[n], n))
        else:
            tied.sort(key=lambda n: (-free[n], n))
        name = tied[0]
        out.append((name, biggest))
        left -= biggest
        del rest[name]
    return out if left <= 0 else None


def _pods_tier(
    tiers: Callable[[str, ResourceVector, int], int | None],
    pod: ResourceVector,
    per_pod: int,
    cluster: str,
    share: int,
) -> int | None:
    return tiers(cluster, pod, share // per_pod)


class SplitError(ValueError):
    """An auto split no cluster set can hold; the message names the field."""


def auto_shares(
    hj: HyperJob,
    measures: Sequence[Callable[[str], Mapping[str, int]]],
    tiers: Callable[[str, ResourceVector, int], int | None] | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """Each auto replicated job's (cluster, accelerators) shares: split over the first of
    ``measures`` (per cluster, how much of an accelerator type it offers) that holds it, among the
    clusters its ``clusterNames`` allow. ``tiers`` (cluster, pod request, pods) breaks ties between
    clusters by the network tier that holds a share. SplitError when none does."""
    shares: dict[str, list[tuple[str, int]]] = {}
    for i, rj in enumerate(hj.replicated):
        if not rj.auto:
            continue
        task, per_pod = rj.split_task()
        kind = rj.split.accelerator_type
        assert rj.split.accelerators is not None and rj.template is not None
        pod = rj.template.tasks[task].pod_request
        tier = None if tiers is None else partial(_pods_tier, tiers, pod, per_pod)
        total = rj.split.accelerators * 1000  # accelerators are counted in thousandths
        allowed = set(rj.cluster_names)
        split = None
        amounts: dict[str, int] = {}
        for measure in measures:
            amounts = {c: v for c, v in measure(kind).items() if not allowed or c in allowed}
            split = split_accelerators(total, per_pod, amounts, hj.max_domains, tier)
            if split is not None:
                break
        if split is None:
            limit = "" if hj.max_domains is None else f" within maxDomains {hj.max_domains}"
            raise SplitError(
                f"spec.replicatedJobs[{i}].splitPolicy.accelerators: no {len(amounts) or 'Ready'} cluster(s) "
                f"can hold {rj.split.accelerators} {kind}{limit}"
            )
        shares[rj.name] = split
    return shares


def split_over(hj: HyperJob, clusters: Mapping[str, ClusterSnap]) -> dict[str, list[tuple[str, int]]]:
    """The auto split over ``clusters`` (by name): over what they have free, else over their whole
    capacity; clusters that take equal shares ranked by the network tier holding a share's pods."""

    def free(kind: str) -> dict[str, int]:
        return {name: sum(n.free.get(kind, 0) for n in c.nodes) for name, c in clusters.items()}

    def capacity(kind: str) -> dict[str, int]:
        return {name: sum(n.allocatable.get(kind, 0) for n in c.nodes) for name, c in clusters.items()}

    def tier(cluster: str, pod: ResourceVector, pods: int) -> int | None:
        c = clusters.get(cluster)
        return None if c is None or not c.hypernodes else lowest_tier(c, ((pod, pods),), None)

    return auto_shares(hj, (free, capacity), tier)
