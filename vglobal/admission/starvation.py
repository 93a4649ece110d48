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


def reservation(clusters: Clusters, fits: Sequence[int], gang: PreparedGang) -> tuple[int, IntArray] | None:
    """(cluster, per-node capacity to hold) for a gang that fits these clusters when they are empty.

    The cluster with the largest free share of what the gang needs wins (it completes soonest), then
    the name; on it, the gang is packed onto the nodes that are emptiest now.
    """
    if not fits:
        return None
    dims = np.flatnonzero(gang.total > 0)
    at = np.array(fits, dtype=np.int64)
    share = (clusters.total_free[at][:, dims] / np.maximum(clusters.total_alloc[at][:, dims], 1)).sum(axis=1)
    for c in at[np.lexsort((at, -share))].tolist():
        room = clusters.alloc[c]
        busy = (room[:, dims] - clusters.free[c][:, dims]).sum(axis=1)
        order = np.argsort(busy, kind="stable")
        _, after = pack(room[order], gang.shapes)
        if after is not None:
            held = np.zeros_like(room)
            held[order] = room[order] - after
            return c, held
    return None
