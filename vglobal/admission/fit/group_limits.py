"""A queue's ``volcano.sh/nodegroup-resource-limits`` at the hub: per node group, what its pods may
hold there, on the resources named (Volcano's nodegroup plugin checks allocated(queue, group) +
a pod's request against it, pod by pod, on the agent).

What a queue holds in a group of a cluster is what its running jobs' pods use on that group's nodes,
plus what this cycle admits there. A gang is placed with the groups that could not take even its
smallest pod held away from it; if the placement still puts more into a group than its limit
leaves, that group is held away too and the gang placed again, so a job the hub sends can be placed
whole under the limits. Preemption, reclaim, partitions and the vGPU card fit do not look at the
limits: there the agent's plugin has the last word.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from vglobal.admission.fit.candidates import Candidates
from vglobal.admission.fit.gang import PreparedGang
from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.fit.node_mask import BLOCKED
from vglobal.admission.fit.placement import Clusters, Held, HeldRows, Placement
from vglobal.admission.snapshot import QueueSnap, RunningJob
from vglobal.model.queue_affinity import NODE_GROUP_LABEL, NODE_GROUP_LIMITS

Found = tuple[int, Placement] | None
Fit = Callable[[Mapping[int, Held]], Found]  # placement with these holds


class GroupLimits:
    def __init__(
        self,
        queues: Sequence[QueueSnap],
        running: Sequence[RunningJob],
        clusters: Clusters,
        index: ResourceIndex,
    ) -> None:
        self.clusters, self.index = clusters, index
        # queue -> group -> (columns named, amounts)
        self._limits: dict[str, dict[str, tuple[IntArray, IntArray]]] = {}
        for q in queues:
            if q.node_group_limits:
                self._limits[q.name] = {g: _named(index, v) for g, v in q.node_group_limits.items()}
        self._running = running
        self._used: dict[tuple[str, int, str], IntArray] | None = None
        self._groups: dict[int, list[str | None]] = {}

    def limited(self, queue: str) -> bool:
        return queue in self._limits

    @property
    def active(self) -> bool:
        """Some queue has limits."""
        return bool(self._limits)

    def note(self, cand: Candidates, queue: str) -> Candidates:
        """The same clusters under a key of the queue's own (a failure under its limits is not the
        same gang's elsewhere), saying which groups it is limited in."""
        groups = ", ".join(sorted(self._limits[queue]))
        note = f"queue {queue} limits what it holds in node groups {groups} ({NODE_GROUP_LIMITS})"
        return Candidates(
            cand.array,
            cand.ids,
            cand.key + b"|limits|" + queue.encode(),
            f"{cand.note}; {note}" if cand.note else note,
            cand.spread,
            cand.keep_accel,
        )

    def _group_of(self, c: int) -> list[str | None]:
        got = self._groups.get(c)
        if got is None:
            labels = {n.name: n.labels for n in self.clusters.snaps[c].nodes}
            order = sorted(self.clusters.node_col[c], key=self.clusters.node_col[c].__getitem__)
            got = self._groups[c] = [labels[n].get(NODE_GROUP_LABEL) for n in order]
        return got

    def _usage(self) -> dict[tuple[str, int, str], IntArray]:
        if self._used is None:
            self._used = {}
            for job in self._running:
                c = self.clusters.col.get(job.cluster)
                if job.queue not in self._limits or c is None:
                    continue
                groups, rows = self._group_of(c), self.clusters.node_col[c]
                for node, vec in job.placements.items():
                    row = rows.get(node)
                    group = None if row is None else groups[row]
                    if group is not None:
                        self._add((job.queue, c, group), np.array(self.index.known_row(vec), dtype=np.int64))
        return self._used

    def _add(self, key: tuple[str, int, str], amount: IntArray) -> None:
        used = self._usage() if self._used is None else self._used
        got = used.get(key)
        used[key] = amount.copy() if got is None else got + amount

    def _left(self, queue: str, c: int, group: str) -> IntArray | None:
        """What the limit leaves the queue in the group, on the columns named (None: no limit)."""
        limit = self._limits[queue].get(group)
        if limit is None:
            return None
        cols, amounts = limit
        used = self._usage().get((queue, c, group))
        return amounts - (used[cols] if used is not None else 0)

    def place(
        self, queue: str, cand: Candidates, gang: PreparedGang, held: Mapping[int, Held], fit: Fit
    ) -> Found:
        """The gang placed within the queue's limits (``fit`` places it with holds), and its usage
        counted; None if no cluster takes it so."""
        closed: dict[int, set[str]] = {}
        for c in cand.ids:
            for group, (cols, _) in self._limits[queue].items():
                left = self._left(queue, c, group)
                if left is not None and all((s.row[cols] > left).any() for s in gang.shapes):
                    closed.setdefault(c, set()).add(group)  # not even one of its pods fits there
        for _ in range(len(self._limits[queue]) * max(len(cand.ids), 1) + 1):
            found = fit(self._held(held, closed))
            if found is None:
                return None
            c, placement = found
            per_group = self._placed(c, placement)
            over = {
                g
                for g, amount in per_group.items()
                if (left := self._left(queue, c, g)) is not None
                and (amount[self._limits[queue][g][0]] > left).any()
            }
            if not over:
                used, put = self._usage(), self.clusters.ledger.put
                for g, amount in per_group.items():
                    key = (queue, c, g)
                    got = used.get(key)
                    put(used, key, amount.copy() if got is None else got + amount)  # never in place
                return found
            closed.setdefault(c, set()).update(over)
        return None

    def _placed(self, c: int, placement: Placement) -> dict[str, IntArray]:
        """What the placement puts into each group of cluster c."""
        free, groups = self.clusters.free(c), self._group_of(c)
        out: dict[str, IntArray] = {}
        for row, after in placement.rows.items():
            group = groups[row]
            if group is not None:
                amount = free[row] - np.array(after, dtype=np.int64)
                out[group] = out[group] + amount if group in out else amount
        return out

    def _held(self, base: Mapping[int, Held], closed: Mapping[int, set[str]]) -> Mapping[int, Held]:
        if not closed:
            return base
        out = dict(base)
        for c, groups in closed.items():
            rows = [r for r, g in enumerate(self._group_of(c)) if g in groups]
            kept = base.get(c)
            matrix = np.zeros_like(self.clusters.free(c)) if kept is None else np.array(kept.matrix)
            matrix[rows] = BLOCKED
            out[c] = HeldRows(matrix)
        return out


def _named(index: ResourceIndex, limit: Mapping[str, int]) -> tuple[IntArray, IntArray]:
    cols = [index.col[n] for n in limit if n in index.col]
    return np.array(cols, dtype=np.int64), np.array([limit[index.names[c]] for c in cols], dtype=np.int64)
