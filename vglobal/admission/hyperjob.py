"""A HyperJob's children admitted as one gang across clusters, and the auto split of accelerators.

Rules (the README's "HyperJobs" says the same):
- One decision per HyperJob and cycle: its pending children are admitted together or none is.
  Until ``minAvailable`` children run (default: all), every pending child must be placed at once;
  once that many are admitted, the rest follow one by one as room allows.
- Each child's gang must fit its own cluster (the usual first-fit-decreasing packing).
- Children go to different clusters: a child takes a candidate cluster no sibling holds (running
  or placed in this decision), in the placement policy's order. Only when no such cluster can hold
  it does it share one with a sibling (its ``clusterNames`` name fewer clusters than there are
  children, or the others lack room), the siblings' gangs then packed together on that cluster.
- The whole HyperJob fits its queue's limits at once (the sum of the children's requests) and is
  charged to the queue as one job; HyperJobs are decided before the cycle's other jobs, highest
  priority first, then oldest.
- A HyperJob that waits says which child fits no cluster, and what the closest cluster had.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.admission.checks import Checks
from vglobal.admission.explain import budget_wait, queue_wait
from vglobal.admission.gang import PreparedGang
from vglobal.admission.placement import Candidates, Clusters, Placement
from vglobal.admission.prepare import Job, Leaf, Prepared
from vglobal.admission.snapshot import Admit, Gang, PendingJob, RunningJob, Wait
from vglobal.model.reasons import WaitKind

__all__ = ["Group", "admit_groups", "groups_of", "split_accelerators"]


@dataclass(slots=True)
class Group:
    key: str
    queue: str
    min_available: int
    pending: list[PendingJob]  # in child order
    running: list[str]  # clusters its admitted children hold, one per child


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
    for g in groups.values():
        g.pending.sort(key=lambda j: j.group.index if j.group is not None else 0)
    return sorted(
        groups.values(),
        key=lambda g: (-max(j.priority for j in g.pending), min(j.created for j in g.pending), g.key),
    )


def _combined(gangs: Sequence[Gang]) -> Gang:
    return tuple(shape for gang in gangs for shape in gang)


class _Decision:
    """One HyperJob's tentative placements: nothing is committed until every child needed fits."""

    def __init__(self, prep: Prepared, clusters: Clusters, taken: Iterable[str]) -> None:
        self.prep, self.clusters = prep, clusters
        self.taken = {clusters.col[c] for c in taken if c in clusters.col}
        self.chosen: dict[int, list[Gang]] = {}  # cluster -> gangs placed there by this decision
        self.placements: dict[int, tuple[Placement, PreparedGang]] = {}

    def _fit(self, c: int, gangs: list[Gang]) -> tuple[Placement, PreparedGang] | None:
        gang = self.prep.gang(gangs[0] if len(gangs) == 1 else _combined(gangs))
        placement = self.clusters.fit(c, gang)
        return None if placement is None else (placement, gang)

    def place(self, job: PendingJob) -> int | None:
        """The cluster the child goes to (held tentatively), or None."""
        clusters = self.clusters
        cand = clusters.candidates(job)
        gang = self.prep.gang(job.gang)
        shared: list[int] = []
        for c in clusters.order(cand, gang):
            if c in self.taken or c in self.chosen:
                shared.append(c)
                continue
            got = self._fit(c, [job.gang])
            if got is not None:
                self.chosen[c] = [job.gang]
                self.placements[c] = got
                return c
        for c in shared:  # no free-standing cluster holds it: share one with a sibling
            gangs = [*self.chosen.get(c, []), job.gang]
            got = self._fit(c, gangs)
            if got is not None:
                self.chosen[c] = gangs
                self.placements[c] = got
                return c
        return None

    def why_not(self, job: PendingJob) -> str:
        clusters = self.clusters
        cand = clusters.candidates(job)
        gang = self.prep.gang(job.gang)
        free = [c for c in cand.ids if c not in self.taken and c not in self.chosen]
        held = sorted(clusters.names[c] for c in cand.ids if c not in free)
        if free:
            arr = np.array(free, dtype=np.int64)
            best = clusters.best_effort(Candidates(arr, tuple(free), arr.tobytes()), gang)
        else:
            best = "no candidate cluster is free of its siblings"
        text = f"child {job.name} ({clusters.describe(gang)}) fits no cluster: {best}"
        if held:
            text += f"; its siblings hold {', '.join(held)}"
        return text

    def commit(self) -> None:
        for c, (placement, gang) in self.placements.items():
            self.clusters.commit(c, placement, gang)


def _as_job(prep: Prepared, group: Group, jobs: Sequence[PendingJob], leaf: int, serial: int) -> Job:
    """The children ``jobs`` as one job of admission's form: their summed request, for the queue's
    checks and its charge (a HyperJob counts as one job of its queue)."""
    size = prep.index.size
    req = [0] * size
    for j in jobs:
        for r, v in enumerate(prep.index.row(j.request)):
            req[r] += v
    dims = tuple(r for r, v in enumerate(req) if v)
    first = jobs[0]
    gang = prep.gang(first.gang)
    return Job(first, leaf, req, -serial, dims, gang, prep.clusters.candidates(first))


def admit_groups(
    groups: Sequence[Group],
    prep: Prepared,
    checks: Checks,
    decisions: MutableMapping[str, Admit | Wait],
    admitted: list[str],
    budget: int = 0,
) -> None:
    """Decide every HyperJob's pending children: Admit for each placed, Wait for the rest. Once
    ``budget`` admissions are made (0: no limit) the HyperJobs left wait a turn."""
    tree, clusters = prep.tree, prep.clusters
    for serial, group in enumerate(groups, start=1):
        if budget and len(admitted) >= budget:
            wait = budget_wait(budget)
            decisions.update((j.uid, wait) for j in group.pending)
            continue
        i = tree.idx.get(group.queue, -1)
        if i < 0 or not tree.is_leaf[i] or not tree.open[i]:
            wait = queue_wait(tree, group.queue)
            decisions.update((j.uid, wait) for j in group.pending)
            continue
        decision = _Decision(prep, clusters, group.running)
        need = max(group.min_available - len(group.running), 0)
        placed: list[tuple[PendingJob, int]] = []
        misses: list[PendingJob] = []
        for job in group.pending:
            c = decision.place(job)
            if c is None:
                misses.append(job)
            else:
                placed.append((job, c))
        if need and misses and len(placed) < need:
            text = decision.why_not(misses[0])
            wait = Wait(
                WaitKind.NoFit,
                f"HyperJob {group.key} waits whole ({need} children must start together): {text}",
            )
            decisions.update((j.uid, wait) for j in group.pending)
            continue
        if placed:
            as_job = _as_job(prep, group, [j for j, _ in placed], i, serial)
            refused = (
                checks.capability(as_job, Leaf(i)) or (checks.guarded and checks.guarantees(as_job)) or None
            )
            if refused is not None:
                wait = Wait(refused.kind, f"HyperJob {group.key} waits whole: {refused.reason}")
                decisions.update((j.uid, wait) for j in group.pending)
                continue
            decision.commit()
            checks.charge(as_job)
            for job, c in placed:
                decisions[job.uid] = Admit(clusters.names[c])
                admitted.append(job.uid)
        for job in misses:
            text = decision.why_not(job)
            decisions[job.uid] = Wait(
                WaitKind.NoFit, f"HyperJob {group.key} runs without it until room frees: {text}"
            )


def split_accelerators(
    total: int, per_pod: int, free: Mapping[str, int], max_domains: int | None
) -> list[tuple[str, int]] | None:
    """``total`` accelerators over the fewest clusters: the clusters with the most free first
    (then by name), each taking what it has free in whole pods, up to ``max_domains`` clusters.
    None when they cannot hold it all."""
    if total <= 0 or per_pod <= 0:
        return None
    left = -(-total // per_pod) * per_pod  # whole pods
    out: list[tuple[str, int]] = []
    for name, amount in sorted(free.items(), key=lambda kv: (-kv[1], kv[0])):
        if left <= 0 or (max_domains is not None and len(out) >= max_domains):
            break
        share = min(amount // per_pod * per_pod, left)
        if share > 0:
            out.append((name, share))
            left -= share
    return out if left <= 0 else None
