"""Progressive filling over the queue tree: which leaf queue offers the next job, and in what order
a queue offers its own.

Every non-leaf queue keeps a heap of its children keyed by (higher priority, lower dominant share
AFTER the child's next job, older, name). A child's next job is the one its own subtree would pick,
so comparing the children of a parent compares the ancestors just below the common ancestor, as
Volcano's hierarchical capacity plugin does. Only the path of the queue that changed is re-keyed;
outdated heap entries are skipped by a version number.

With a fair-share half-life the share a queue is keyed by starts from its decayed allocation
(usage.py: its usage over time, rolled up the tree) instead of what it holds now; what the cycle
admits counts in full on top, so one queue far below its share still alternates within a cycle
once it has caught up.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from operator import attrgetter

from vglobal.admission.share.tree import QueueTree
from vglobal.admission.share.usage import decayed_allocation
from vglobal.admission.snapshot import PendingJob, QueueSnap, uid_of

# A dimension the queue deserves none of: any use of it ranks the queue after every finite share.
_NO_SHARE = 1e12

Key = tuple[int, float, int, str, int, int]

# A queue's jobs in order: priority (highest first), then creation, then uid. Three stable sorts
# on C-level keys (reverse keeps equal items in order) beat one sort on a Python tuple.
_BY_CREATED = attrgetter("created")
_BY_PRIORITY = attrgetter("priority")


def queue_order(jobs: Iterable[PendingJob]) -> list[PendingJob]:
    out = sorted(jobs, key=uid_of)
    out.sort(key=_BY_CREATED)
    out.sort(key=_BY_PRIORITY, reverse=True)
    return out


def decayed_offsets(tree: QueueTree, queues: Iterable[QueueSnap], half_life: float) -> list[list[float]]:
    """Per tree node: its decayed allocation minus its allocation at the start of the cycle, so
    ``alloc + offset`` is the decayed allocation plus what the cycle admitted (rolled up)."""
    index, n = tree.index, len(tree.names)
    own = [[0.0] * index.size for _ in range(n)]
    for q in queues:
        i = tree.idx.get(q.name)
        if i is None or i == 0:
            continue
        own_life = half_life if q.half_life is None else q.half_life
        # A queue of half-life 0 counts what it holds now (its own, rolled up below).
        held = decayed_allocation(q.usage, own_life) if own_life > 0 else dict(q.allocated.items())
        for r, a in held.items():
            c = index.col.get(r)
            if c is not None:
                own[i][c] += a
    for i in reversed(tree.order):  # bottom-up, as the allocation is rolled up
        p = tree.parent[i]
        if p >= 0:
            own[p] = [a + b for a, b in zip(own[p], own[i], strict=True)]
    return [[d - a for d, a in zip(own[i], tree.initial_alloc[i], strict=True)] for i in range(n)]


class FairOrder:
    def __init__(self, tree: QueueTree, offsets: list[list[float]] | None = None) -> None:
        """``offsets`` (decayed_offsets) move each queue's share from its allocation now to its
        decayed one; None = instantaneous fair share."""
        self.tree = tree
        n = len(tree.names)
        self.inv = [[(1.0 / d) if d > 0 else _NO_SHARE for d in des.tolist()] for des in tree.deserved]
        self.heaps: list[list[Key]] = [[] for _ in range(n)]
        self.version = [0] * n
        self.next_req: list[Sequence[int] | None] = [None] * n
        self.offsets = offsets

    def share_after(self, i: int, req: Sequence[int]) -> float:
        # A resource neither used nor asked for adds 0 whatever its inverse deserved.
        alloc = self.tree.alloc[i]
        if self.offsets is not None:
            off = self.offsets[i]
            return max(
                [
                    max(a + o, 0.0) * w + q * w
                    for a, o, q, w in zip(alloc, off, req, self.inv[i], strict=True)
                ],
                default=0.0,
            )
        return max([(a + q) * w for a, q, w in zip(alloc, req, self.inv[i], strict=True)], default=0.0)

    def _best_child(self, p: int) -> int:
        heap = self.heaps[p]
        version = self.version
        while heap:
            top = heap[0]
            if version[top[5]] == top[4]:
                return top[5]
            heapq.heappop(heap)
        return -1

    def update(self, leaf: int, req: Sequence[int] | None) -> None:
        """The leaf's next job changed (or its usage did): re-key it and every ancestor."""
        tree = self.tree
        parent, priority, created, names = tree.parent, tree.priority, tree.created, tree.names
        version, next_req, heaps, share_after = self.version, self.next_req, self.heaps, self.share_after
        next_req[leaf] = req
        i = leaf
        while i > 0:
            p = parent[i]
            v = version[i] = version[i] + 1
            nxt = next_req[i]
            if nxt is not None:
                heapq.heappush(heaps[p], (-priority[i], share_after(i, nxt), created[i], names[i], v, i))
            b = self._best_child(p)
            next_req[p] = next_req[b] if b >= 0 else None
            i = p

    def pick(self) -> int:
        """The leaf whose next job goes next, or -1 when no queue has a job left."""
        i = 0
        is_leaf = self.tree.is_leaf
        while not is_leaf[i]:
            i = self._best_child(i)
            if i < 0:
                return -1
        return i
