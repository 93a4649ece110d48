"""Gang-fit placement over per-node free vectors, one numpy matrix (nodes x resources) per cluster.

A gang fits a cluster when all its pods can be packed onto that cluster's nodes, first-fit
decreasing: the biggest shape first, each node taking as many pods as it can hold. Placing a job
subtracts what it took, so later jobs of the same cycle see the capacity as used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vglobal.admission.explain import fmt_gang, fmt_row
from vglobal.admission.index import IntArray, ResourceIndex
from vglobal.admission.snapshot import ClusterSnap, Gang, PendingJob


@dataclass(frozen=True, slots=True)
class Shape:
    row: IntArray  # one pod's request
    count: int
    dims: IntArray  # columns the pod requests


@dataclass(frozen=True, slots=True)
class PreparedGang:
    shapes: tuple[Shape, ...]  # biggest first
    total: IntArray  # sum over the gang's pods
    biggest: IntArray  # per column, the largest single-pod request
    key: tuple[tuple[tuple[int, ...], int], ...]
    described: tuple[tuple[list[int], int], ...]
    dims: IntArray  # columns the gang requests at all


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
        Shape(np.array(r, dtype=np.int64), merged[r], np.flatnonzero(np.array(r) > 0).astype(np.int64))
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
    return PreparedGang(shapes, total, biggest, key, tuple((list(r), merged[r]) for r in rows), dims)


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
        if shape.count == 1:  # the common single pod: the first node with room
            fits = np.asarray((out[:, d] >= shape.row[d]).all(axis=1), dtype=bool)
            at = int(fits.argmax())
            if not bool(fits[at]):
                return placed, None
            if not copied:
                out = out.copy()
                copied = True
            out[at] -= shape.row
            placed += 1
            continue
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


def selector_matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class Clusters:
    """Free capacity of every cluster of the snapshot, kept current as jobs are placed."""

    def __init__(self, clusters: Sequence[ClusterSnap], index: ResourceIndex, policy: str) -> None:
        self.index = index
        self.spread = policy == "spread"
        snaps = sorted({c.name: c for c in clusters}.values(), key=lambda c: c.name)
        self.snaps = snaps
        self.names = [c.name for c in snaps]
        self.col = {n: i for i, n in enumerate(self.names)}
        self.schedulable = np.array([c.schedulable for c in snaps], dtype=bool)
        size = index.size
        self.free: list[IntArray] = []
        self.alloc: list[IntArray] = []
        self.node_col: list[dict[str, int]] = []
        for c in snaps:
            nodes = sorted(c.nodes, key=lambda n: n.name)
            self.node_col.append({n.name: i for i, n in enumerate(nodes)})
            free = np.array([index.row(n.free) for n in nodes], dtype=np.int64).reshape(len(nodes), size)
            self.free.append(np.maximum(free, 0))
            alloc = np.array([index.row(n.allocatable) for n in nodes], dtype=np.int64)
            self.alloc.append(alloc.reshape(len(nodes), size))
        count = len(snaps)
        self.total_free = np.zeros((count, size), dtype=np.int64)
        self.max_free = np.zeros((count, size), dtype=np.int64)
        self.total_alloc = np.zeros((count, size), dtype=np.int64)
        self.max_alloc = np.zeros((count, size), dtype=np.int64)
        for i in range(count):
            if self.alloc[i].shape[0]:
                self.total_alloc[i] = self.alloc[i].sum(axis=0)
                self.max_alloc[i] = self.alloc[i].max(axis=0)
                self.total_free[i] = self.free[i].sum(axis=0)
                self.max_free[i] = self.free[i].max(axis=0)
        self._alloc_f = np.maximum(self.total_alloc, 1).astype(np.float64)
        # Used share per cluster and resource: what binpack / spread rank by.
        self.fullness = (self.total_alloc - self.total_free) / self._alloc_f
        self.free_sum: list[int] = [int(v) for v in self.total_free[self.schedulable].sum(axis=0)]
        self._candidates: dict[tuple[object, ...], IntArray] = {}
        self._masks: dict[bytes, npt.NDArray[np.bool_]] = {}

    def capacity(self) -> IntArray:
        """Total allocatable of schedulable clusters: the root queue's capacity."""
        out: IntArray = self.total_alloc[self.schedulable].sum(axis=0)
        return out

    def free_total(self) -> list[int]:
        """Free capacity summed over schedulable clusters, kept current by commit()."""
        return self.free_sum

    def candidates(self, job: PendingJob) -> IntArray:
        """Schedulable clusters the job's annotations allow and that have not rejected it."""
        if job.allowed_clusters is None and not job.cluster_selector and not job.excluded_clusters:
            key: tuple[object, ...] = ()  # the common case: every schedulable cluster
        else:
            key = (job.allowed_clusters, tuple(sorted(job.cluster_selector.items())), job.excluded_clusters)
        got = self._candidates.get(key)
        if got is None:
            ok = [
                bool(self.schedulable[i])
                and (job.allowed_clusters is None or c.name in job.allowed_clusters)
                and c.name not in job.excluded_clusters
                and selector_matches(c.labels, job.cluster_selector)
                for i, c in enumerate(self.snaps)
            ]
            got = np.flatnonzero(np.array(ok, dtype=bool)).astype(np.int64)
            self._candidates[key] = got
        return got

    def ranked(self, cand: IntArray, gang: PreparedGang) -> list[int]:
        """Candidates that may hold the gang by their totals, best score first, then name."""
        if cand.size == 0:
            return []
        key = cand.tobytes()
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = np.zeros(len(self.names), dtype=bool)
            mask[cand] = True
        ok = mask & (self.total_free >= gang.total).all(axis=1) & (self.max_free >= gang.biggest).all(axis=1)
        picked = np.flatnonzero(ok)
        if picked.size <= 1:
            return [int(c) for c in picked]
        score = self.fullness[picked][:, gang.dims].sum(axis=1)
        return [int(c) for c in picked[np.lexsort((picked, score if self.spread else -score))]]

    def fit(self, c: int, gang: PreparedGang, held: IntArray | None = None) -> IntArray | None:
        """The cluster's free matrix after placing the gang, or None. `held` is capacity kept away."""
        free = self.free[c] if held is None else np.maximum(self.free[c] - held, 0)
        _, after = pack(free, gang.shapes)
        if after is None:
            # commit() leaves max_free as an upper bound; tighten it now that it let a misfit through
            self.max_free[c] = self.free[c].max(axis=0, initial=0)
            return None
        return after if held is None else self.free[c] - (free - after)

    def commit(self, c: int, after: IntArray, used: IntArray) -> None:
        """Make `after` (from fit) the cluster's free matrix; `used` is what the placement took.

        max_free is not lowered here: as an upper bound it stays a valid quick filter (fit() tightens
        it when it lets a misfit through), and recomputing it per placement is a scan of the nodes.
        """
        self.free[c] = after
        self.total_free[c] -= used
        self.fullness[c] = (self.total_alloc[c] - self.total_free[c]) / self._alloc_f[c]
        if self.schedulable[c]:
            self.free_sum = [a - int(b) for a, b in zip(self.free_sum, used, strict=True)]

    def best_effort(self, cand: IntArray, gang: PreparedGang) -> str:
        """Which candidate came closest to holding the gang, and what it had."""
        if cand.size == 0:
            return "no candidate cluster"
        wanted = sum(s.count for s in gang.shapes)
        best = (-1, 0, 0)
        for c in cand.tolist():
            placed, _ = pack(self.free[c], gang.shapes)
            if placed > best[0]:
                best = (placed, c, 0)
        placed, c, _ = best
        first = gang.shapes[0] if gang.shapes else None
        text = f"best: {self.names[c]} can hold {placed} of the {wanted} pods"
        if first is not None and first.dims.size:
            free = self.free[c]
            rooms = int(((free[:, first.dims] >= first.row[first.dims]).all(axis=1)).sum())
            text += f" ({rooms} nodes have {fmt_row(self.index, first.row.tolist())} free)"
        short = np.maximum(gang.total - self.total_free[c], 0)
        if short.any():
            text += f", lacks {fmt_row(self.index, short.tolist())} in total"
        return text

    def fits_allocatable(self, cand: IntArray, gang: PreparedGang) -> list[int]:
        """Candidates whose whole capacity (ignoring current usage) could hold the gang."""
        out = []
        for c in cand.tolist():
            if (self.total_alloc[c] >= gang.total).all() and pack(self.alloc[c], gang.shapes)[1] is not None:
                out.append(c)
        return out

    def describe(self, gang: PreparedGang) -> str:
        return fmt_gang(self.index, gang.described)


class FailureCache:
    """Gangs that fit no candidate cluster this cycle; a bigger gang then fails without packing.

    Free capacity only shrinks within a cycle, so a failure stays a failure.
    """

    def __init__(self) -> None:
        self._rows: dict[bytes, list[tuple[IntArray, int, str]]] = {}
        self._stack: dict[bytes, tuple[IntArray, IntArray, list[str]]] = {}
        self._exact: dict[tuple[bytes, object], str] = {}
        self._misses: dict[tuple[bytes, object], int] = {}

    def lookup(self, cand: IntArray, gang: PreparedGang) -> str | None:
        ck = cand.tobytes()
        key = (ck, gang.key)
        hit = self._exact.get(key)
        if hit is not None:
            return hit
        rows = self._rows.get(ck)
        if not rows or self._misses.get(key) == len(rows):
            return None  # nothing recorded since this gang last missed
        stacked = self._stack.get(ck)
        if stacked is None:
            stacked = (np.stack([r[0] for r in rows]), np.array([r[1] for r in rows]), [r[2] for r in rows])
            self._stack[ck] = stacked
        mat, counts, reasons = stacked
        for shape in gang.shapes:
            dominated = (shape.row >= mat).all(axis=1) & (shape.count >= counts)
            if dominated.any():
                found = self._exact[key] = reasons[int(np.argmax(dominated))]
                return found
        self._misses[key] = len(rows)
        return None

    def record(self, cand: IntArray, gang: PreparedGang, reason: str) -> None:
        ck = cand.tobytes()
        if len(gang.shapes) == 1:
            self._rows.setdefault(ck, []).append((gang.shapes[0].row, gang.shapes[0].count, reason))
            self._stack.pop(ck, None)
        else:
            self._exact[(ck, gang.key)] = reason
