"""What a wait reason names when a gang fits no candidate cluster now: the cluster that comes
closest to holding it on the resources it asks for, or, when no node of any candidate could hold
one of its pods even empty, that it never fits today."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from vglobal.admission.explain import fmt_amount, fmt_row
from vglobal.admission.fit.gang import PreparedGang, pack
from vglobal.admission.fit.index import IntArray, ResourceIndex


class Clusters(Protocol):
    """What is read of placement's Clusters (placement.py imports this module)."""

    @property
    def index(self) -> ResourceIndex: ...
    @property
    def alloc(self) -> list[IntArray]: ...
    def free(self, c: int) -> IntArray: ...


class Candidates(Protocol):
    @property
    def ids(self) -> tuple[int, ...]: ...

# Per cluster, the node rows a gang may use (None: every node).
Allowed = Callable[[int], "np.ndarray"] | None


def closeness(
    placed: int, free: Sequence[int] | IntArray, alloc: IntArray, gang: PreparedGang
) -> tuple[int, int, float, float]:
    """How close a cluster comes to holding the gang, larger is closer: fewest asked resources it
    has none of at all, then most pods held now, then the largest share of the gang's scarcest asked
    resource free, then allocatable. A CPU-only cluster never outranks one with some GPUs for a
    GPU gang, even if neither holds a pod now."""
    dims = gang.dims[gang.total[gang.dims] > 0]
    if not dims.size:
        return (0, placed, 0.0, 0.0)
    need = gang.total[dims]
    have = alloc[dims]
    now = np.asarray(free, dtype=np.int64)[dims]
    return (-int((have <= 0).sum()), placed, float((now / need).min()), float((have / need).min()))


def closest(
    clusters: Clusters, cand: Candidates, gang: PreparedGang, allowed: Allowed = None
) -> tuple[int, int]:
    """(cluster, pods it can hold now) of the candidate closest to holding the gang (first in
    name order on a tie)."""
    best: tuple[tuple[int, int, float, float], int, int] | None = None
    for c in cand.ids:
        free, alloc = clusters.free(c), clusters.alloc[c]
        if allowed is not None:
            rows = allowed(c)
            free, alloc = free[rows], alloc[rows]
        placed, _ = pack(free, gang.shapes)
        key = closeness(placed, free.sum(axis=0), alloc.sum(axis=0), gang)
        if best is None or key > best[0]:
            best = (key, c, placed)
    assert best is not None, "asked only with candidates"
    return best[1], best[2]



def never_fits(
    clusters: Clusters, cand: Candidates, gang: PreparedGang, allowed: Allowed = None
) -> str | None:
    """Why no node a candidate lets the gang use could hold one of its pods even empty (judged on
    allocatable), else None: "needs 16 nvidia.com/gpu per pod, the largest node has 8"."""
    if not cand.ids:
        return None  # no candidate at all says more (cordoned, NotReady, the allow-list)
    mats = []
    for c in cand.ids:
        alloc = clusters.alloc[c]
        mats.append(alloc if allowed is None else alloc[allowed(c)])
    index = clusters.index
    for shape in gang.shapes:
        row, dims = shape.row, shape.dims
        if any(bool((m[:, dims] >= row[dims]).all(axis=1).any()) for m in mats if m.shape[0]):
            continue
        largest = np.zeros(index.size, dtype=np.int64)
        for m in mats:
            if m.shape[0]:
                largest = np.maximum(largest, m.max(axis=0))
        over = [int(r) for r in dims if largest[r] < row[r]]
        if over:
            r = over[0]
            return (
                f"needs {fmt_amount(index, r, int(row[r]))} {index.names[r]} per pod, "
                f"the largest node has {fmt_amount(index, r, int(largest[r]))}"
            )
        return f"needs {fmt_row(index, row.tolist())} per pod, no node has all of it at once"
    return None
