"""Starvation guard: where a long-waiting gang holds capacity against its own queue's later jobs.

Without it a big gang waits forever behind small jobs of its own queue that keep taking the nodes
it needs as they free up (Volcano Global's head-of-line starvation). Lower- or equal-priority jobs
of the same queue may not use the held node capacity; other queues compete for it by fair share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vglobal.admission.index import IntArray
from vglobal.admission.placement import Clusters, PreparedGang, pack


class Hold:
    """Per-node capacity a starving gang keeps on one cluster: packed onto the nodes that were
    emptiest when it was made. Most holds are never consulted in their cycle (the queue places
    nothing more there), so the matrix is worked out from a copy of the free rows on first use."""

    __slots__ = ("_clusters", "_free", "_gang", "_matrix", "cluster")

    def __init__(self, clusters: Clusters, c: int, gang: PreparedGang) -> None:
        self.cluster = c
        self._clusters = clusters
        self._gang = gang
        self._free = list(clusters.rows[c])  # rows are replaced, never changed in place
        self._matrix: IntArray | None = None

    def _pack(self) -> IntArray | None:
        room = self._clusters.alloc[self.cluster]
        dims = self._gang.dims
        free = np.array(self._free, dtype=np.int64).reshape(room.shape)
        busy = (room[:, dims] - free[:, dims]).sum(axis=1)
        order = np.argsort(busy, kind="stable")
        _, after = pack(room[order], self._gang.shapes)
        if after is None:
            return None
        held = np.zeros_like(room)
        held[order] = room[order] - after
        return held

    @property
    def matrix(self) -> IntArray:
        if self._matrix is None:
            got = self._pack()
            assert got is not None, "a hold is only made where the gang fits the empty cluster"
            self._matrix = got
        return self._matrix


def reservation(clusters: Clusters, fits: Sequence[int], gang: PreparedGang) -> Hold | None:
    """Where to hold capacity for a gang that fits these clusters when they are empty.

    The cluster with the largest free share of what the gang needs wins (it completes soonest), then
    the name; on it, the gang is packed onto the nodes that are emptiest now.
    """
    dims = gang.dims.tolist()
    alloc = clusters.alloc_totals
    tot = clusters.tot
    shares = sorted((-sum([tot[c][r] / alloc[c][r] for r in dims]), c) for c in fits)
    for _, c in shares:
        hold = Hold(clusters, c, gang)
        # One shape packs onto any node order once it fits the empty cluster; mixed shapes are
        # packed now, since first-fit in another node order may fail.
        if len(gang.shapes) > 1:
            hold._matrix = hold._pack()
            if hold._matrix is None:
                continue
        return hold
    return None
