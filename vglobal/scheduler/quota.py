"""Float resource arithmetic for queue quotas (proportion, capacity, overcommit).

Quotas are dense float vectors over the session's resource index, with ``inf`` for "unlimited".
Comparisons use Volcano's tolerance: ``a <= b`` per dimension when ``a < b + 0.1``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from vglobal.scheduler.nodes import ResourceIndex

Vec = npt.NDArray[np.float64]
TOLERANCE = 0.1
_CPU_MEM = ("cpu", "memory")


def zeros(index: ResourceIndex) -> Vec:
    return np.zeros(len(index), dtype=np.float64)


def infinite(index: ResourceIndex) -> Vec:
    return np.full(len(index), np.inf)


def from_mapping(index: ResourceIndex, amounts: Mapping[str, int] | None, missing: float) -> Vec:
    """Dense vector; dimensions absent from ``amounts`` take ``missing`` (0 or inf)."""
    out = np.full(len(index), missing)
    for name, value in (amounts or {}).items():
        if name in index.col:
            out[index.col[name]] = float(value)
    return out


def capability(index: ResourceIndex, amounts: Mapping[str, int] | None) -> Vec:
    """Queue capability: missing dimensions and cpu/memory values <= 0 are unlimited."""
    out = from_mapping(index, amounts, np.inf)
    for name in _CPU_MEM:
        c = index.col[name]
        if out[c] <= 0:
            out[c] = np.inf
    return out


def le(a: Vec, b: Vec) -> bool:
    return bool(np.all(a < b + TOLERANCE))


def le_on(a: Vec, b: Vec, dims: npt.NDArray[np.bool_]) -> bool:
    """``a <= b`` only on ``dims`` (Volcano's LessEqualWithDimension)."""
    return bool(np.all((a < b + TOLERANCE)[dims]))


def pos(a: Vec) -> Vec:
    out: Vec = np.maximum(a, 0.0)
    return out


def share(allocated: Vec, deserved: Vec) -> float:
    """max_r alloc_r / deserved_r over the dimensions deserved has (Volcano's ResourceNames)."""
    dims = deserved >= TOLERANCE
    if not dims.any():
        return 0.0
    return float(np.max(allocated[dims] / deserved[dims]))


def equal(a: Vec, b: Vec) -> bool:
    with np.errstate(invalid="ignore"):
        same = (a == b) | (np.abs(a - b) < TOLERANCE)
    return bool(np.all(same))


def is_empty(a: Vec) -> bool:
    return bool(np.all(a < TOLERANCE))
