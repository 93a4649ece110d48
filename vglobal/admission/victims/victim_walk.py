"""A node's victims walked in order: which of them their queues may lose (Volcano's Reclaimable
rule, pod by pod for a whole job: losable.may_lose_whole), counting what the earlier ones
took, until the gang's next pod fits (reclaim_jobs.py plans with it)."""

from __future__ import annotations

from dataclasses import dataclass

from vglobal.admission.fit.gang import Shape
from vglobal.admission.fit.index import IntArray
from vglobal.admission.victims.losable import may_lose_whole


@dataclass(frozen=True, slots=True)
class Victim:
    uid: str
    queue: int
    req: IntArray
    node: int  # the node that holds most of it; the greedy groups victims by it
    rows: IntArray  # node rows of its cluster
    usage: IntArray  # what it uses on each of those rows
    rank: int  # position in victim order (lowest priority, newest, uid)
    req_list: list[int]  # req and its use of `node` as plain ints, for the per-node walks
    here: list[int]
    last: list[int]  # its smallest pod: the last of it its queue loses (see may_lose_whole)


class QueueRows:
    """Per victim queue, as plain lists fetched on first use (the walks are scalar): its allocation
    less what it gives back, and what the rate limit still lets it lose."""

    def __init__(
        self,
        left: IntArray,
        budget: IntArray | None,
        deserved: list[list[int]],
        guarantee: list[list[int]],
        slots: int,
        short: list[bool],
    ) -> None:
        self._left, self._budget = left, budget
        self.deserved, self.guarantee, self.slots, self.short = deserved, guarantee, slots, short
        self._rows: dict[int, tuple[list[int], list[int] | None]] = {}

    def row(self, q: int) -> tuple[list[int], list[int] | None]:
        got = self._rows.get(q)
        if got is None:
            budget = None if self._budget is None else self._budget[q].tolist()
            got = self._rows[q] = (self._left[q].tolist(), budget)
        return got

    def may_lose(self, q: int, req: list[int], last: list[int], gone: list[int] | None) -> bool:
        """Whether queue q, having given up `gone` already in this walk, may lose a job of `req`
        whose smallest pod is `last`."""
        left, budget = self.row(q)
        if gone is not None:
            left = [a - g for a, g in zip(left, gone, strict=True)]
        if budget is not None:
            spent = gone or [0] * len(req)
            if any(r + g > b for r, g, b in zip(req, spent, budget, strict=True) if r):
                return False
        des = self.deserved[q]
        guarantee, slots = self.guarantee[q], self.slots
        return may_lose_whole(left, req, last, des, guarantee, slots, self.short)

    def lose(self, v: Victim) -> None:
        left, budget = self.row(v.queue)
        left = [a - r for a, r in zip(left, v.req_list, strict=True)]
        if budget is not None:
            budget = [b - r for b, r in zip(budget, v.req_list, strict=True)]
        self._rows[v.queue] = (left, budget)


def _room(row: list[int], dims: list[int], pod: list[int]) -> int:
    return min((row[d] // pod[d] for d in dims), default=1 << 30)


def walk_node(
    free: IntArray, node: int, victims: list[Victim], shape: Shape, rows: QueueRows
) -> list[Victim]:
    """The fewest of `victims`, in order, whose removal makes room for one more pod on the node.

    Each must be one its queue may lose, counting what the earlier ones took.
    """
    dims = shape.dims.tolist()
    pod = shape.row.tolist()
    row = free[node].tolist()
    target = _room(row, dims, pod) + 1
    lost: dict[int, list[int]] = {}
    taken: list[Victim] = []
    for v in victims:
        gone = lost.get(v.queue)
        if not rows.may_lose(v.queue, v.req_list, v.last, gone):
            continue
        lost[v.queue] = v.req_list if gone is None else [r + g for r, g in zip(v.req_list, gone, strict=True)]
        taken.append(v)
        row = [a + b for a, b in zip(row, v.here, strict=True)]
        if _room(row, dims, pod) >= target:
            return taken
    return []
