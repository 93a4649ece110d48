"""The queue tree of one snapshot: usage rolled up, realCap top-down, deserved by water-filling.

Follows Volcano's hierarchical capacity plugin for realCap and its proportion plugin for the
weighted water-filling (reference/volcano-scheduler-semantics.md section 3). Node 0 is the implicit
root; its capacity is the total allocatable of the schedulable clusters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from vglobal.admission.fit.index import FloatArray, IntArray, ResourceIndex
from vglobal.admission.share.water import water_fill
from vglobal.admission.snapshot import ROOT, QueueSnap

INF = float("inf")
# water_fill's signature: (total, weights, real caps, demands, guarantees) -> shares
Fill = Callable[
    [FloatArray, list[int], list[FloatArray], list[FloatArray], list[FloatArray]], list[FloatArray]
]
# "No limit" in the exact int64 rows: far above any real quantity, far below int64's limit, so a
# sum of a few stays exact. Quantities are compared as integers: a float64 of memory bytes rounds
# whole bytes away once fractions are added to it.
UNLIMITED = 1 << 62


class QueueTree:
    """Dense per-queue state; node i's lists/arrays are indexed by i (0 is root)."""

    def __init__(
        self,
        queues: Iterable[QueueSnap],
        index: ResourceIndex,
        capacity: Mapping[str, int],
        pending: Iterable[tuple[str, list[int]]],
        fill: Fill = water_fill,
    ) -> None:
        """`pending` holds (queue name, request row) of every pending job: the demand on top of usage;
        `fill` is water_fill or what stands for it (a memo of it: memo.py)."""
        self._fill = fill
        self.index = index
        snaps: dict[str, QueueSnap] = {}
        for q in sorted(queues, key=lambda q: q.name):
            if q.name != ROOT:
                snaps.setdefault(q.name, q)
        self.names: list[str] = [ROOT, *snaps]
        self.idx: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        self.snaps: list[QueueSnap] = [QueueSnap(name=ROOT, parent=None), *snaps.values()]
        n = len(self.names)
        self.parent = [-1] * n
        for i in range(1, n):
            self.parent[i] = self.idx.get(self.snaps[i].parent or ROOT, 0)
        self._break_cycles()
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i in range(1, n):
            self.children[self.parent[i]].append(i)  # names are sorted, so children are too
        self.is_leaf = [not c for c in self.children]
        self.is_leaf[0] = False
        # path[i]: i and its ancestors below root, leaf first.
        self.path: list[list[int]] = [[] for _ in range(n)]
        self.order = self._top_down()
        for i in self.order[1:]:
            self.path[i] = [i, *self.path[self.parent[i]]]
        self.open = [True] * n
        for i in self.order[1:]:
            self.open[i] = self.snaps[i].open and self.open[self.parent[i]]
        self.priority = [s.priority for s in self.snaps]
        self.created = [s.created for s in self.snaps]
        self.reclaimable = [s.reclaimable for s in self.snaps]
        self.guarantee: list[list[int]] = [index.row(s.guarantee) for s in self.snaps]
        self.alloc: list[list[int]] = [index.row(s.allocated) for s in self.snaps]
        self.alloc[0] = [0] * index.size
        for i in reversed(self.order):  # bottom-up roll-up: own usage plus the children's
            self.alloc[i] = [
                a + b for a, b in zip(self.alloc[i], self._child_sum(self.alloc, i), strict=True)
            ]
        self.initial_alloc = [row[:] for row in self.alloc]
        cap = np.array(index.row(capacity), dtype=np.int64)
        self.real_cap = self._real_caps(cap)
        self.demand = self._demands(pending)
        self.deserved = self._deserved(cap)

    def _child_sum(self, rows: list[list[int]], i: int) -> list[int]:
        out = [0] * self.index.size
        for c in self.children[i]:
            out = [a + b for a, b in zip(out, rows[c], strict=True)]
        return out

    def _break_cycles(self) -> None:
        """A queue whose parent chain loops is hung under root, so every queue has a path."""
        for start in range(1, len(self.parent)):
            seen = {start}
            cur = self.parent[start]
            while cur > 0:
                if cur in seen:
                    self.parent[start] = 0
                    break
                seen.add(cur)
                cur = self.parent[cur]

    def _top_down(self) -> list[int]:
        order = [0]
        for i in order:
            order.extend(self.children[i])
        return order

    def _real_caps(self, capacity: IntArray) -> list[IntArray]:
        """Exact int64 rows, UNLIMITED where no limit applies."""
        size = self.index.size
        # capability with the parent's dims filled in
        inherited = [np.full(size, UNLIMITED, dtype=np.int64) for _ in self.names]
        real = [np.full(size, UNLIMITED, dtype=np.int64) for _ in self.names]
        real[0] = capacity.copy()
        for p in self.order:
            kids = self.children[p]
            if not kids:
                continue
            gsum = np.sum([np.array(self.guarantee[c], dtype=np.int64) for c in kids], axis=0)
            room = np.maximum(real[p] - gsum, 0)
            for c in kids:
                cap = inherited[p].copy()
                own = self.snaps[c].capability
                if own is not None:
                    for name, value in own.items():
                        cap[self.index.col[name]] = min(int(value), UNLIMITED)
                inherited[c] = cap
                own_room = np.minimum(room + np.array(self.guarantee[c], dtype=np.int64), UNLIMITED)
                real[c] = np.minimum(cap, own_room)
        self.capability = inherited
        return real

    def _demands(self, pending: Iterable[tuple[str, list[int]]]) -> list[IntArray]:
        demand = [np.array(a, dtype=np.int64) for a in self.alloc]
        sums = [[0] * self.index.size for _ in self.names]
        for queue, row in pending:
            i = self.idx.get(queue)
            if i is not None and self.is_leaf[i]:
                sums[i] = [a + b for a, b in zip(sums[i], row, strict=True)]
        extra = [np.array(s, dtype=np.int64) for s in sums]
        for i in reversed(self.order):
            if self.parent[i] >= 0:
                extra[self.parent[i]] += extra[i]
        return [d + e for d, e in zip(demand, extra, strict=True)]

    def _deserved(self, capacity: IntArray) -> list[IntArray]:
        """Exact int64 rows: water-filling's fractions are cut to whole units once, at the end."""
        deserved = [np.zeros(self.index.size) for _ in self.names]
        deserved[0] = capacity.astype(np.float64)
        for p in self.order:
            kids = self.children[p]
            if not kids:
                continue
            left = deserved[p].copy()
            filled: list[int] = []
            for c in kids:
                spec = self.snaps[c].deserved
                if spec is None:
                    filled.append(c)
                    continue
                if not spec:  # named, all zero (a zero quantity is dropped): it deserves nothing
                    deserved[c] = np.array(self.guarantee[c], dtype=np.float64)
                    continue
                want = _floats(self.real_cap[c])  # dims spec.deserved leaves out are bounded by realCap
                for name, value in spec.items():
                    want[self.index.col[name]] = min(value, want[self.index.col[name]])
                deserved[c] = np.maximum(want, np.array(self.guarantee[c], dtype=np.float64))
                left = np.maximum(left - deserved[c], 0.0)
            if filled:
                shares = self._fill(
                    left,
                    [max(self.snaps[c].weight, 0) for c in filled],
                    [_floats(self.real_cap[c]) for c in filled],
                    [self.demand[c].astype(np.float64) for c in filled],
                    [np.array(self.guarantee[c], dtype=np.float64) for c in filled],
                )
                for c, share in zip(filled, shares, strict=True):
                    deserved[c] = share
        return [_exact(d) for d in deserved]

    def leaves(self) -> list[int]:
        return [i for i in range(len(self.names)) if self.is_leaf[i]]


def _floats(row: IntArray) -> FloatArray:
    """An exact row as water-filling's floats: UNLIMITED becomes +inf."""
    out: FloatArray = np.where(row >= UNLIMITED, INF, row.astype(np.float64))
    return out


def _exact(row: FloatArray) -> IntArray:
    """Water-filling's share cut to whole units (a share within 1e-6 of a unit is that unit)."""
    out: IntArray = np.floor(np.minimum(row, float(UNLIMITED)) + 1e-6).astype(np.int64)
    return out
