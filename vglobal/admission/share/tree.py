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
        self._levels = self._by_depth()
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

    def _by_depth(self) -> list[IntArray]:
        """The queues below root by depth, top-down (a level's parents are all in the one above)."""
        depth = [0] * len(self.names)
        levels: list[list[int]] = []
        for i in self.order[1:]:
            d = depth[i] = depth[self.parent[i]] + 1
            if d > len(levels):
                levels.append([])
            levels[d - 1].append(i)
        return [np.array(level, dtype=np.intp) for level in levels]

    def _real_caps(self, capacity: IntArray) -> list[IntArray]:
        """Exact int64 rows, UNLIMITED where no limit applies (a level of the tree at a time)."""
        size, n = self.index.size, len(self.names)
        self._guarantees = guarantees = np.array(self.guarantee, dtype=np.int64).reshape(n, size)
        # capability with the parent's dims filled in
        inherited = np.full((n, size), UNLIMITED, dtype=np.int64)
        real = np.full((n, size), UNLIMITED, dtype=np.int64)
        real[0] = capacity
        gsum = np.zeros((n, size), dtype=np.int64)
        parent = np.array(self.parent, dtype=np.intp)
        np.add.at(gsum, parent[1:], guarantees[1:])
        col = self.index.col
        for kids in self._levels:
            up = parent[kids]
            room = np.maximum(real[up] - gsum[up], 0)
            cap = inherited[up]
            for k, c in enumerate(kids.tolist()):
                own = self.snaps[c].capability
                if own is not None:
                    for name, value in own.items():
                        cap[k, col[name]] = min(int(value), UNLIMITED)
            inherited[kids] = cap
            real[kids] = np.minimum(cap, np.minimum(room + guarantees[kids], UNLIMITED))
        self.capability = list(inherited)
        return list(real)

    def _demands(self, pending: Iterable[tuple[str, list[int]]]) -> list[IntArray]:
        n, size = len(self.names), self.index.size
        demand = np.array(self.alloc, dtype=np.int64).reshape(n, size)
        sums = [[0] * size for _ in self.names]
        for queue, row in pending:
            i = self.idx.get(queue)
            if i is not None and self.is_leaf[i]:
                sums[i] = [a + b for a, b in zip(sums[i], row, strict=True)]
        extra = np.array(sums, dtype=np.int64).reshape(n, size)
        parent = np.array(self.parent, dtype=np.intp)
        for kids in reversed(self._levels):  # bottom-up
            np.add.at(extra, parent[kids], extra[kids])
        self._demand = rows = demand + extra
        return list(rows)

    def _deserved(self, capacity: IntArray) -> list[IntArray]:
        """Exact int64 rows: water-filling's fractions are cut to whole units once, at the end."""
        deserved = np.zeros((len(self.names), self.index.size))
        deserved[0] = capacity.astype(np.float64)
        caps = _floats(np.array(self.real_cap, dtype=np.int64).reshape(deserved.shape))
        wants = self._demand.astype(np.float64)
        floors = self._guarantees.astype(np.float64)
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
                    deserved[c] = floors[c]
                    continue
                want = caps[c].copy()  # dims spec.deserved leaves out are bounded by realCap
                for name, value in spec.items():
                    want[self.index.col[name]] = min(value, want[self.index.col[name]])
                deserved[c] = np.maximum(want, floors[c])
                left = np.maximum(left - deserved[c], 0.0)
            if filled:
                shares = self._fill(
                    left,
                    [max(self.snaps[c].weight, 0) for c in filled],
                    list(caps[filled]),
                    list(wants[filled]),
                    list(floors[filled]),
                )
                deserved[filled] = np.vstack(shares)
        return list(_exact(deserved))

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
