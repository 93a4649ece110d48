"""What one cycle derived that the next may take over where its inputs are the same: the loop that
runs admission keeps a Memo between cycles and hands it to each (``admit(snapshot, memo)``).

A memo changes what a cycle costs, never what it decides: every entry is keyed by exactly the
input it was derived from (the same job objects, held here so their identities stay theirs; the
same bytes), and an input that differs is derived afresh. A cycle with few changes therefore pays
for what changed, not for the backlog: a queue whose jobs are the ones it had keeps their order
(new ones are merged in, gone ones left out), and a parent whose children's water-filling inputs
are unchanged keeps its shares. Only what the last cycle used is kept, so the memo's size follows
the snapshot's.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from vglobal.admission.fit.index import FloatArray
from vglobal.admission.share.order import queue_key, queue_order
from vglobal.admission.share.water import water_fill
from vglobal.admission.snapshot import PendingJob

# At most this many jobs gone from a queue and come to it since the last cycle are put in place one
# by one (a binary search each); more, and the queue is sorted afresh.
_FEW = 512
UIntArray = npt.NDArray[np.uint64]


def _edited(ordered: list[PendingJob], gone: list[PendingJob], new: list[PendingJob]) -> list[PendingJob]:
    """The queue order with ``gone`` taken out and ``new`` put in: the order a sort would give,
    since the key is a total order (uids are unique)."""
    out = list(ordered)
    for job in gone:
        at = bisect.bisect_left(out, queue_key(job), key=queue_key)
        while out[at] is not job:  # equal keys only if a uid repeats: the job is among them
            at += 1
        del out[at]
    for job in new:
        out.insert(bisect.bisect_right(out, queue_key(job), key=queue_key), job)
    return out


@dataclass(slots=True)
class _Order:
    ids: UIntArray  # the queue's jobs' identities, in the snapshot's order
    jobs: Sequence[PendingJob]  # those jobs, held so their identities cannot be reused
    ordered: list[PendingJob]  # in queue order (never handed out: callers get a copy)


@dataclass(eq=False)
class Memo:
    """Per queue, its jobs in queue order; per water-filling input, its shares. Each cycle keeps
    what it used (``_next_*``) and drops the rest when it ends (``done``)."""

    orders: dict[str, _Order] = field(default_factory=dict)
    fills: dict[bytes, list[FloatArray]] = field(default_factory=dict)
    _next_orders: dict[str, _Order] = field(default_factory=dict)
    _next_fills: dict[bytes, list[FloatArray]] = field(default_factory=dict)
    # How much this cycle took over (for benches and tests): queues, jobs, fills.
    reused: list[int] = field(default_factory=lambda: [0, 0, 0])

    def order(self, queue: str, jobs: Sequence[PendingJob]) -> list[PendingJob]:
        """The queue's jobs in queue order (share/order.py), as queue_order gives them."""
        ids = np.fromiter(map(id, jobs), dtype=np.uint64, count=len(jobs))
        prev = self.orders.get(queue)
        ordered = None
        if prev is not None and np.array_equal(prev.ids, ids):
            ordered = prev.ordered
            self.reused[0] += 1
            self.reused[1] += len(jobs)
        elif prev is not None:
            gone = np.flatnonzero(~np.isin(prev.ids, ids))
            new = np.flatnonzero(~np.isin(ids, prev.ids))
            if len(gone) + len(new) <= _FEW:
                ordered = _edited(
                    prev.ordered, [prev.jobs[int(i)] for i in gone], [jobs[int(i)] for i in new]
                )
                self.reused[1] += len(jobs) - len(new)
        if ordered is None:
            ordered = queue_order(jobs)
        self._next_orders[queue] = _Order(ids, jobs, ordered)
        return list(ordered)

    def fill(
        self,
        total: FloatArray,
        weights: list[int],
        real_caps: list[FloatArray],
        demands: list[FloatArray],
        guarantees: list[FloatArray],
    ) -> list[FloatArray]:
        """water_fill's shares, taken over when every input is the same to the bit."""
        key = b"".join(
            (
                np.asarray([len(weights), total.shape[0]], dtype=np.int64).tobytes(),
                np.asarray(weights, dtype=np.int64).tobytes(),
                total.tobytes(),
                np.vstack(real_caps).tobytes(),
                np.vstack(demands).tobytes(),
                np.vstack(guarantees).tobytes(),
            )
        )
        got = self.fills.get(key)
        if got is None:
            got = water_fill(total, weights, real_caps, demands, guarantees)
        else:
            self.reused[2] += 1
        self._next_fills[key] = got
        return [row.copy() for row in got]

    def start(self) -> None:
        """A cycle begins: nothing of it is noted yet."""
        self._next_orders, self._next_fills = {}, {}
        self.reused = [0, 0, 0]

    def done(self) -> None:
        """The cycle ended: keep only what it used."""
        self.orders, self.fills = self._next_orders, self._next_fills
        self._next_orders, self._next_fills = {}, {}
