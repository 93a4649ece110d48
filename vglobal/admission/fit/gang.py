"""A gang in admission's form: its pod shapes as dense rows, biggest first, and first-fit packing.

A gang is packed first-fit decreasing: the biggest shape first, each node in order taking as many
pods as it can hold. `pack` does it on a whole free matrix at once (numpy); placement.py keeps a
faster scalar form of the same packing for the hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.snapshot import Gang

Pairs = tuple[tuple[int, int], ...]  # (column, amount) of the non-zero columns of a row


@dataclass(frozen=True, slots=True)
class Shape:
    row: IntArray  # one pod's request
    count: int
    dims: IntArray  # columns the pod requests
    pairs: Pairs
    tag: str  # names the row in per-cluster cursors (a str caches its hash)


@dataclass(frozen=True, slots=True)
class PreparedGang:
    shapes: tuple[Shape, ...]  # biggest first
    total: IntArray  # sum over the gang's pods
    biggest: IntArray  # per column, the largest single-pod request
    key: tuple[tuple[tuple[int, ...], int], ...]
    described: tuple[tuple[list[int], int], ...]
    dims: IntArray  # columns the gang requests at all
    total_pairs: Pairs
    dims_key: tuple[int, ...]
    tag: str  # names the gang in per-cycle caches


def _pairs(row: Sequence[int]) -> Pairs:
    return tuple((r, int(v)) for r, v in enumerate(row) if v)


def prepare_gang(gang: Gang, index: ResourceIndex, scale: IntArray) -> PreparedGang:
    """Shapes merged and sorted biggest first (dominant share of the largest node, then name order)."""
    merged: dict[tuple[int, ...], int] = {}
    for vec, count in gang:
        if count > 0:
            row = tuple(index.row(vec))
            merged[row] = merged.get(row, 0) + count

    def size(row: tuple[int, ...]) -> tuple[float, float, tuple[int, ...]]:
        shares = [v / s for v, s in zip(row, scale.tolist(), strict=True) if v]
        return (-max(shares, default=0.0), -sum(shares), row)

    rows = sorted(merged, key=size)
    shapes = tuple(
        Shape(
            np.array(r, dtype=np.int64),
            merged[r],
            np.flatnonzero(np.array(r) > 0).astype(np.int64),
            _pairs(r),
            repr(r),
        )
        for r in rows
    )
    total = np.zeros(index.size, dtype=np.int64)
    biggest = np.zeros(index.size, dtype=np.int64)
    for s in shapes:
        total += s.row * s.count
        biggest = np.maximum(biggest, s.row)
    key = tuple((r, merged[r]) for r in rows)
    dims = np.flatnonzero(total > 0).astype(np.int64)
    if dims.size == 0:
        dims = np.arange(index.size, dtype=np.int64)
    return PreparedGang(
        shapes,
        total,
        biggest,
        key,
        tuple((list(r), merged[r]) for r in rows),
        dims,
        _pairs(total.tolist()),
        tuple(dims.tolist()),
        repr(key),
    )


def pack(free: IntArray, shapes: Sequence[Shape]) -> tuple[int, IntArray | None]:
    """Pods placed and the free matrix after placing them all, or None as the second item if not all fit."""
    placed = 0
    out = free
    copied = False
    for shape in shapes:
        if out.shape[0] == 0:
            return placed, None  # even a pod that requests nothing needs a node
        if shape.dims.size == 0:
            placed += shape.count
            continue
        d = shape.dims
        per_node = (out[:, d] // shape.row[d]).min(axis=1) if d.size > 1 else out[:, d[0]] // shape.row[d[0]]
        np.maximum(per_node, 0, out=per_node)
        cum = np.cumsum(per_node)
        if int(cum[-1]) < shape.count:
            return placed + int(cum[-1]), None
        last = int(np.searchsorted(cum, shape.count))
        take = per_node[: last + 1].copy()
        take[last] -= int(cum[last]) - shape.count
        if not copied:
            out = out.copy()
            copied = True
        out[: last + 1] -= take[:, None] * shape.row
        placed += shape.count
    return placed, out
