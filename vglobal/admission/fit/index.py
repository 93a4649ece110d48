"""A per-snapshot resource index: every resource name gets a column, so vectors become int arrays."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from vglobal.model.resources import ResourceVector

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class ResourceIndex:
    """Sorted resource names and conversions between ResourceVector and a dense row."""

    __slots__ = ("col", "names", "size")

    def __init__(self, names: Iterable[str]) -> None:
        self.names: tuple[str, ...] = tuple(sorted(set(names)))
        self.col: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        self.size = len(self.names)

    def row(self, vec: Mapping[str, int]) -> list[int]:
        out = [0] * self.size
        col = self.col
        for name, value in vec.items():
            out[col[name]] = value
        return out

    def known_row(self, vec: Mapping[str, int]) -> list[int]:
        """Like row(), dropping resources the index does not know (no pending job asks for them)."""
        out = [0] * self.size
        col = self.col
        for name, value in vec.items():
            i = col.get(name)
            if i is not None:
                out[i] = value
        return out

    def array(self, vec: Mapping[str, int]) -> IntArray:
        return np.array(self.row(vec), dtype=np.int64)

    def vector(self, values: Iterable[float | int]) -> ResourceVector:
        """A dense row back to a ResourceVector (floats are floored to whole units)."""
        return ResourceVector({n: int(v) for n, v in zip(self.names, values, strict=True) if v})
