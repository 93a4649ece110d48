"""Reclaim that pays for itself: the "worth" reclaim rule (AdmissionPolicy.reclaim_rule).

On top of Volcano's reclaim rule (reclaim_jobs.py), judged on the share that orders admission (the
decayed one when a half-life is set, else what the queues hold now), so admission does not hand
out what reclaim takes back:
- protection: a queue whose share is below ``protected_fraction`` of its deserved is never a
  victim (Armada's protectedFractionOfFairShare);
- hysteresis: a queue within ``reclaim_margin`` of its deserved is left alone, as a victim (share up
  to 1 + margin) and as a reclaimer (share from 1 - margin);
- worth: a victim's lost work is its run since its last checkpoint (a reported one, else the run
  modulo its declared interval, else the whole run), in resource-seconds of its dominant share of
  the capacity. The reclaimer's gain is the part of its job's request that fills its queue's
  shortfall from its deserved, as a dominant share of the capacity, held ``reclaim_horizon``
  seconds. A plan goes ahead only while its victims' lost work adds up to at most that gain, so
  the youngest and cheapest victims go first, and a long run is never traded for a short wait;
- agreement: a job that started while the reclaimer waited is not its victim. Admission gave it
  room the reclaimer could not use then; taking it back would undo that cycle's decision (the
  reclaimer claims room as it frees, or takes older runs worth their loss);
- queues near their GPU-hour budget (QueueSnap.near_budget) give their running jobs first.
Times come in the snapshot: nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import RunningJob, Snapshot

if TYPE_CHECKING:
    from vglobal.admission.victims.victim_walk import Victim

WORTH = "worth"


def lost_seconds(job: RunningJob, now: float) -> float:
    """Seconds of work a stop now throws away: since its last checkpoint, else since it started."""
    since = job.running_since if job.running_since is not None else job.created
    if job.checkpointed is not None and job.checkpointed >= since:
        return max(now - job.checkpointed, 0.0)
    ran = max(now - since, 0.0)
    if job.checkpoint_interval > 0:
        return ran % job.checkpoint_interval
    return ran


def judged_shares(tree: QueueTree, offsets: Sequence[Sequence[float]] | None) -> list[float]:
    """Per tree node: the dominant share of its deserved it holds at the start of the cycle, decayed
    when the fair order is (offsets), as that order keys it."""
    out = []
    for i, (alloc, des) in enumerate(zip(tree.initial_alloc, tree.deserved, strict=True)):
        off = offsets[i] if offsets is not None else [0.0] * len(alloc)
        share = 0.0
        for a, o, d in zip(alloc, off, des.tolist(), strict=True):
            used = max(a + o, 0.0)
            if d > 0:
                share = max(share, used / d)
            elif used > 0:
                share = float("inf")
        out.append(share)
    return out


class Worth:
    """A cycle's view of the rule: which queues may lose or take jobs, what each victim costs."""

    def __init__(
        self,
        snapshot: Snapshot,
        tree: QueueTree,
        index: ResourceIndex,
        offsets: Sequence[Sequence[float]] | None,
    ) -> None:
        policy = snapshot.policy
        self.tree, self.index, self.now = tree, index, snapshot.now
        self.share = judged_shares(tree, offsets)
        self._offsets = offsets
        self.protect = max(policy.protected_fraction, 1.0 + policy.reclaim_margin)
        self.low = 1.0 - policy.reclaim_margin
        self.horizon = policy.reclaim_horizon
        self.near = [s.near_budget for s in tree.snaps]
        self.capacity = [float(c) for c in tree.real_cap[0].tolist()]
        self._cost: dict[str, float] = {}
        self._since: dict[str, float] = {}

    def may_lose(self, q: int) -> bool:
        """Queue q may give victims: near its budget, or its share above protection and margin."""
        return self.near[q] or self.share[q] > self.protect

    def may_take(self, q: int) -> bool:
        """Queue q may reclaim: its share is below its deserved by more than the margin."""
        return self.share[q] < self.low

    def dominant(self, row: Sequence[int] | Sequence[float]) -> float:
        """The largest fraction of the capacity the row takes of any resource."""
        return max((float(r) / c for r, c in zip(row, self.capacity, strict=True) if c > 0), default=0.0)

    def cost(self, job: RunningJob) -> float:
        """The victim's lost work: lost seconds times its dominant share of the capacity."""
        got = self._cost.get(job.uid)
        if got is None:
            row = self.index.known_row(job.request)
            got = self._cost[job.uid] = lost_seconds(job, self.now) * self.dominant(row)
            self._since[job.uid] = job.running_since if job.running_since is not None else job.created
        return got

    def part_cost(self, job: RunningJob, part: Sequence[int]) -> float:
        """The lost work of stopping `part` (a row: some of its pods) of the job alone."""
        return lost_seconds(job, self.now) * self.dominant(part)

    def started_since(self, job: RunningJob, waiting_since: float) -> bool:
        """Whether the run started while the reclaimer waited: then it is not its victim."""
        since = job.running_since if job.running_since is not None else job.created
        return since >= waiting_since

    def gain(self, q: int, req: Sequence[int]) -> float:
        """The reclaimer's gain: the part of `req` that fills queue q's shortfall from its deserved
        (judged as the order judges it), as a share of the capacity, held for the horizon."""
        alloc, des = self.tree.initial_alloc[q], self.tree.deserved[q].tolist()
        off = self._offsets[q] if self._offsets is not None else [0.0] * len(alloc)
        rows = zip(req, alloc, off, des, strict=True)
        fill = [min(float(r), max(d - max(a + o, 0.0), 0.0)) for r, a, o, d in rows]
        return self.horizon * self.dominant(fill)

    def pays(self, q: int, req: Sequence[int], waiting_since: float) -> Callable[[Sequence[Victim]], bool]:
        """Whether victims (ordered by order_key, so priced) are worth a job of queue q asking `req`
        that waits since `waiting_since`, none of them started since."""
        gain, cost, since = self.gain(q, req), self._cost, self._since

        def worth(victims: Sequence[Victim]) -> bool:
            if any(since[v.uid] >= waiting_since for v in victims):
                return False
            return sum(cost[v.uid] for v in victims) <= gain

        return worth

    def order_key(self, job: RunningJob) -> tuple[int, bool, float, float, str]:
        """Victim order: lowest priority, its queue near its budget first, cheapest, newest, uid."""
        return (job.priority, not self.near[self.tree.idx[job.queue]], self.cost(job), -job.created, job.uid)
