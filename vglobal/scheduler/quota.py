"""Exact integer resource arithmetic for queue quotas (proportion, capacity, overcommit).

Quotas are dense int64 vectors over the session's resource index in canonical units (cpu
millicores, memory bytes, ...), with ``UNLIMITED`` for "no limit". Volcano compares its float
quantities with a tolerance of 0.1 (``a <= b`` when ``a < b + 0.1``); on integers that is plain
``a <= b``, and integers need no tolerance: a pod that fits exactly fits at any size (a float64
of memory bytes loses whole units beyond 2**53, and water-filling's fractions lose them sooner).
Only ``share`` (an ordering key) is a float.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from vglobal.scheduler.nodes import ResourceIndex

Vec = npt.NDArray[np.int64]
# Far above any real quantity and far below int64's limit, so sums of a few stay exact.
UNLIMITED = 1 << 62
_CPU_MEM = ("cpu", "memory")


def zeros(index: ResourceIndex) -> Vec:
    return np.zeros(len(index), dtype=np.int64)


def infinite(index: ResourceIndex) -> Vec:
    return np.full(len(index), UNLIMITED, dtype=np.int64)


def from_mapping(index: ResourceIndex, amounts: Mapping[str, int] | None, missing: int) -> Vec:
    """Dense vector; dimensions absent from ``amounts`` take ``missing`` (0 or UNLIMITED)."""
    out = np.full(len(index), missing, dtype=np.int64)
    for name, value in (amounts or {}).items():
        if name in index.col:
            out[index.col[name]] = min(int(value), UNLIMITED)
    return out


def capability(index: ResourceIndex, amounts: Mapping[str, int] | None) -> Vec:
    """Queue capability: missing dimensions and cpu/memory values <= 0 are unlimited."""
    out = from_mapping(index, amounts, UNLIMITED)
    for name in _CPU_MEM:
        c = index.col[name]
        if out[c] <= 0:
            out[c] = UNLIMITED
    return out


def is_unlimited(a: Vec) -> npt.NDArray[np.bool_]:
    out: npt.NDArray[np.bool_] = a >= UNLIMITED
    return out


def le(a: Vec, b: Vec) -> bool:
    return bool(np.all(a <= b))


def le_on(a: Vec, b: Vec, dims: npt.NDArray[np.bool_]) -> bool:
    """``a <= b`` only on ``dims`` (Volcano's LessEqualWithDimension)."""
    return bool(np.all((a <= b)[dims]))


def pos(a: Vec) -> Vec:
    out: Vec = np.maximum(a, 0)
    return out


def part(amount: Vec, weight: int, total_weight: int) -> Vec:
    """``amount * weight / total_weight`` rounded down, without overflow for any quantity."""
    whole, rest = np.divmod(amount, total_weight)
    out: Vec = whole * weight + rest * weight // total_weight
    return out


def share(allocated: Vec, deserved: Vec) -> float:
    """max_r alloc_r / deserved_r over the dimensions deserved has (Volcano's ResourceNames)."""
    dims = deserved > 0
    if not dims.any():
        return 0.0
    return float(np.max(allocated[dims] / deserved[dims]))


def equal(a: Vec, b: Vec) -> bool:
    return bool(np.array_equal(a, b))


def is_empty(a: Vec) -> bool:
    return bool(np.all(a <= 0))
