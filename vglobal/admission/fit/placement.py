"""Gang-fit placement over per-node free vectors, kept as plain lists per cluster.

A gang fits a cluster when all its pods can be packed onto that cluster's nodes, first-fit decreasing:
the biggest shape first, each node in name order (then those a pool can add) taking all it can hold.
Placing a job subtracts what it took, so later jobs of the same cycle see the capacity as used.

Free capacity only shrinks within a cycle, which the hot path exploits twice: per cluster and pod
shape a cursor marks the first node that may still hold one pod (every node before it cannot), and
a gang that did not fit a cluster never will this cycle. A placement is then a few scalar steps
instead of a scan of the nodes. The rarer paths (reservations, topology, reclaim, reasons) pack
numpy matrices built from the lists on demand (`gang.pack`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import numpy as np

from vglobal.admission.explain import fmt_gang, fmt_row
from vglobal.admission.fit.candidates import Candidates, CandidateSets
from vglobal.admission.fit.closest import closest
from vglobal.admission.fit.gang import PreparedGang, pack
from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.fit.stages import Stages
from vglobal.admission.ledger import Ledger, Undo
from vglobal.admission.snapshot import ClusterSnap, Gang, NodeSnap, PendingJob, node_order
from vglobal.model.placement_config import NO_CONFIG, PlacementConfig
from vglobal.model.resources import is_accelerator

# A cluster's nodes' free rows (never below 0) and allocatable rows, kept from earlier cycles
# (node_rows.py): (cluster, its nodes in row order, index) -> (rows, matrix, row by node name).
RowsOf = Callable[[str, list[NodeSnap], ResourceIndex], tuple[list[list[int]], IntArray, dict[str, int]]]


class Held(Protocol):
    """Per-node capacity (nodes x resources) of one cluster kept away from a gang."""

    @property
    def matrix(self) -> IntArray: ...


@dataclass(frozen=True, slots=True)
class HeldRows:
    """A Held of a matrix computed once."""

    matrix: IntArray


@dataclass(frozen=True, slots=True)
class Placement:
    """A gang packed onto one cluster, not yet committed: new free rows and cursor moves."""

    rows: dict[int, list[int]]
    cursors: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class _Saved:
    """A cluster as it was when a checkpoint's first commit or release changed it (its undo)."""

    rows: list[list[int]]
    tot: list[int]
    full: list[float]
    cursor: dict[str, int]
    misfit: set[str]


@dataclass(slots=True)
class _Ranking:
    ranked: list[int]
    seen: int  # length of the commit log when `ranked` was last repaired
    members: set[int]
    dropped: int = 0  # how many of the gang's misfits have been taken out


class Clusters:
    """Free capacity of every cluster of the snapshot, kept current as jobs are placed."""

    def __init__(
        self,
        clusters: Sequence[ClusterSnap],
        index: ResourceIndex,
        policy: str,
        ledger: Ledger | None = None,
        keep_accelerators: bool = False,
        config: PlacementConfig = NO_CONFIG,
        now: float = 0.0,
        rows_of: RowsOf | None = None,
    ) -> None:
        self.index = index
        # the cycle's ledger: what a commit or release changes is undone with its checkpoint
        self.ledger = Ledger() if ledger is None else ledger
        self.spread = policy == "spread"
        snaps = sorted({c.name: c for c in clusters}.values(), key=lambda c: c.name)
        self.snaps = snaps
        self.names = [c.name for c in snaps]
        self.col = {n: i for i, n in enumerate(self.names)}
        self.schedulable = np.array([c.schedulable for c in snaps], dtype=bool)
        # the placement stages (stages.py): filters in the candidates, scores in GangFit; the
        # accelerator rule's taint in the ranking below too
        self.stages = Stages(snaps, config, keep_accelerators, now)
        self._accel_dims = [is_accelerator(r) for r in index.names]
        size = index.size
        self.rows: list[list[list[int]]] = []  # per cluster, per node (node_order): free, never < 0
        self.alloc: list[IntArray] = []
        self.node_col: list[dict[str, int]] = []
        for c in snaps:
            nodes = sorted(c.nodes, key=node_order)
            if rows_of is None:
                self.node_col.append({n.name: i for i, n in enumerate(nodes)})
                self.rows.append([[v if v > 0 else 0 for v in index.row(n.free)] for n in nodes])
                alloc = np.array([index.row(n.allocatable) for n in nodes], dtype=np.int64)
            else:  # kept per node object from the last cycles (node_rows.py)
                free, alloc, node_col = rows_of(c.name, nodes, index)
                self.node_col.append(node_col)
                self.rows.append(free)
            self.alloc.append(alloc.reshape(len(nodes), size))
        count = len(snaps)
        self.total_alloc = np.zeros((count, size), dtype=np.int64)
        self.max_alloc = np.zeros((count, size), dtype=np.int64)
        for i in range(count):
            if self.alloc[i].shape[0]:
                self.total_alloc[i] = self.alloc[i].sum(axis=0)
                self.max_alloc[i] = self.alloc[i].max(axis=0)
        self.tot: list[list[int]] = [
            [sum(col) for col in zip(*rows, strict=True)] if rows else [0] * size for rows in self.rows
        ]
        self._alloc_tot = [[max(int(v), 1) for v in row] for row in self.total_alloc.tolist()]
        # Used share per cluster and resource: what binpack / spread rank by.
        self.full: list[list[float]] = [self._fullness(c) for c in range(count)]
        self.free_sum: list[int] = [
            sum(col) for col in zip(*(self.tot[c] for c in range(count) if self.schedulable[c]), strict=True)
        ] or [0] * size
        self._cursor: list[dict[str, int]] = [{} for _ in range(count)]
        self._misfit: list[set[str]] = [set() for _ in range(count)]
        self._version = [0] * count
        self._matrix: list[tuple[int, IntArray] | None] = [None] * count
        self._log: list[int] = []  # clusters in commit order: what moved since a ranking was made
        self._ranks: dict[tuple[bytes, str, bool, bool], _Ranking] = {}
        self._dropped: dict[str, list[int]] = {}  # gang tag -> clusters it no longer fits
        self._scores: dict[tuple[tuple[int, ...], bool, bool], list[tuple[int, float, int]]] = {}
        self.cands = CandidateSets(snaps, self.schedulable, self.stages)
        # Clusters with the same node inventory answer "does it fit when empty" alike.
        kinds: dict[tuple[tuple[int, ...], bytes], int] = {}
        self._inventory = [kinds.setdefault((a.shape, a.tobytes()), len(kinds)) for a in self.alloc]
        self._fits_empty: dict[tuple[int, str], bool] = {}
        self._whole: dict[tuple[bytes, str], list[int]] = {}
        self._keys = [("cluster", c) for c in range(count)]  # each cluster's name in the ledger

    @property
    def moves(self) -> int:
        """How many times a cluster's free room changed this cycle: what was derived from it at
        the same count still holds."""
        return len(self._log)

    @property
    def alloc_totals(self) -> list[list[int]]:
        """Per cluster, its total allocatable with every resource at least 1 (safe to divide by)."""
        return self._alloc_tot

    def _fullness(self, c: int) -> list[float]:
        return [(a - f) / a for a, f in zip(self._alloc_tot[c], self.tot[c], strict=True)]

    # --- views for the numpy paths -------------------------------------------------------------
    def free(self, c: int) -> IntArray:
        """The cluster's free matrix (nodes x resources); do not modify it."""
        got = self._matrix[c]
        if got is None or got[0] != self._version[c]:
            mat = np.array(self.rows[c], dtype=np.int64).reshape(len(self.rows[c]), self.index.size)
            got = self._matrix[c] = (self._version[c], mat)
        return got[1]

    def total_free(self, c: int) -> IntArray:
        return np.array(self.tot[c], dtype=np.int64)

    def capacity(self) -> IntArray:
        """Total allocatable of schedulable clusters: the root queue's capacity."""
        out: IntArray = self.total_alloc[self.schedulable].sum(axis=0)
        return out

    def free_total(self) -> list[int]:
        """Free capacity summed over schedulable clusters, kept current by commit()."""
        return self.free_sum

    # --- candidates and ranking ------------------------------------------------------------------
    def candidates(self, job: PendingJob) -> Candidates:
        """Schedulable clusters the job's annotations allow and that have not rejected it."""
        return self.cands.of(job)

    def candidates_anywhere(self) -> Candidates:
        """Every schedulable cluster: the candidates of a job without placement annotations."""
        return self.cands.anywhere()

    def _rank_keys(self, dims: tuple[int, ...], spread: bool, keep: bool) -> list[tuple[int, float, int]]:
        """Per cluster, its sort key for gangs asking for `dims` (`keep`: not tolerating the
        accelerator rule's taint); commit() keeps it current."""
        got = self._scores.get((dims, spread, keep))
        if got is None:
            got = [self._rank_key(c, dims, spread, keep) for c in range(len(self.names))]
            self._scores[(dims, spread, keep)] = got
        return got

    def _rank_key(self, c: int, dims: tuple[int, ...], spread: bool, keep: bool) -> tuple[int, float, int]:
        score = 0.0
        asks_accel = False
        for r in dims:
            score += self.full[c][r]
            asks_accel = asks_accel or self._accel_dims[r]
        # the taint stage's accelerator rule: work asking for none, clusters without one first
        tier = int(self.stages.kept_for_accelerators(c, asks_accel, keep))
        return (tier, score, c) if spread else (tier, -score, c)

    def order(self, cand: Candidates, gang: PreparedGang) -> list[int]:
        """Candidates that may still hold the gang, best score first (binpack: fullest on the gang's
        resources; spread: emptiest), then name; for a gang asking for no accelerator, clusters
        without one before those with (the taint stage's accelerator rule, unless it tolerates it).

        Kept per (candidates, gang) and repaired from the commit log, since a commit changes the
        score of one cluster only; a cluster the gang did not fit leaves the list for the cycle.
        """
        spread = self.spread if cand.spread is None else cand.spread  # a queue's or job's own
        key = (cand.key, gang.tag, spread, cand.keep_accel)
        entry = self._ranks.get(key)
        rank = self._rank_keys(gang.dims_key, spread, cand.keep_accel).__getitem__
        if entry is None:
            members = set(cand.ids)
            entry = self._ranks[key] = _Ranking(sorted(members, key=rank), len(self._log), members)
            return entry.ranked
        drops = self._dropped.get(gang.tag)
        if drops is not None and len(drops) > entry.dropped:
            for c in drops[entry.dropped :]:
                if c in entry.members:
                    entry.members.discard(c)
                    entry.ranked.remove(c)
            entry.dropped = len(drops)
        log = self._log
        if entry.seen == len(log) - 1 and entry.ranked and entry.ranked[0] == log[-1] and not spread:
            # The usual step: the cluster first in line took a job. Binpack only ranks it higher.
            entry.seen += 1
        if entry.seen != len(log):
            moved = {c for c in log[entry.seen :] if c in entry.members}
            for c in moved:
                entry.ranked.remove(c)
            for c in moved:
                bisect.insort(entry.ranked, c, key=rank)
            entry.seen = len(self._log)
        return entry.ranked

    def place(
        self, cand: Candidates, gang: PreparedGang, held: Mapping[int, Held]
    ) -> tuple[int, Placement] | None:
        """The first cluster in order() that holds the gang, and how; committing is the caller's.
        `held` is per-cluster capacity kept away from this gang (a starvation reservation)."""
        for c in self.order(cand, gang):
            kept = held.get(c) if held else None
            placement = self.fit(c, gang, None if kept is None else kept.matrix)
            if placement is not None:
                return c, placement
        return None

    def could_hold(self, c: int, gang: PreparedGang) -> bool:
        tot = self.tot[c]
        return all(tot[r] >= v for r, v in gang.total_pairs)

    def ranked(self, cand: Candidates, gang: PreparedGang) -> list[int]:
        """Candidates whose free totals may hold the gang, in order()."""
        return [c for c in self.order(cand, gang) if self.could_hold(c, gang)]

    # --- placing -------------------------------------------------------------------------------
    def fit(self, c: int, gang: PreparedGang, held: IntArray | None = None) -> Placement | None:
        """The gang packed onto the cluster's nodes, or None. `held` is capacity kept away from it."""
        if held is not None:
            return self._fit_held(c, gang, held)
        misfit = self._misfit[c]
        if gang.tag in misfit:
            return None
        tot = self.tot[c]
        for r, v in gang.total_pairs:
            if tot[r] < v:
                self._drop(c, gang)
                return None
        rows = self.rows[c]
        n = len(rows)
        if n == 0:
            return None
        cursor = self._cursor[c]
        out: dict[int, list[int]] = {}
        moves: list[tuple[str, int]] = []
        for shape in gang.shapes:
            pairs = shape.pairs
            if not pairs:
                continue  # a pod that requests nothing fits any node
            need = shape.count
            i = cursor.get(shape.tag, 0)
            last = i
            while i < n:
                f = out.get(i)
                fresh = f is None
                if f is None:
                    f = rows[i]
                k = need
                for r, q in pairs:
                    m = f[r] // q
                    if m < k:
                        k = m
                        if not k:
                            break
                if k:
                    if fresh:
                        f = out[i] = f[:]
                    for r, q in pairs:
                        f[r] -= q * k
                    need -= k
                    last = i
                    if not need:
                        break
                i += 1
            if need:
                self._drop(c, gang)
                return None
            # Every node before `last` now lacks room for one more pod of this shape.
            moves.append((shape.tag, last))
        return Placement(out, tuple(moves))

    def _drop(self, c: int, gang: PreparedGang) -> None:
        """The gang does not fit cluster c now, so it will not later this cycle: free only shrinks
        (but not below what a checkpoint took, which may be given back: then nothing is noted)."""
        if self.ledger.open and self.ledger.saved(self._keys[c]):
            return
        self._misfit[c].add(gang.tag)
        self._dropped.setdefault(gang.tag, []).append(c)

    def _fit_held(self, c: int, gang: PreparedGang, held: IntArray) -> Placement | None:
        current = self.free(c)
        free = np.maximum(current - held, 0)
        _, after = pack(free, gang.shapes)
        if after is None:
            return None
        return self.placement_from(c, current - (free - after))

    def placement_from(self, c: int, after: IntArray) -> Placement:
        """A Placement from a whole free matrix after packing (the numpy paths)."""
        changed = np.flatnonzero((after != self.free(c)).any(axis=1))
        return Placement({int(i): after[i].tolist() for i in changed})

    def commit(self, c: int, placement: Placement, gang: PreparedGang) -> None:
        """Make the placement's rows the cluster's free capacity; `gang` is what it placed."""
        rows = self.rows[c]
        self._save(c)
        for i, row in placement.rows.items():
            rows[i] = row
        cursor = self._cursor[c]
        for tag, at in placement.cursors:
            cursor[tag] = at
        tot, full, alloc = self.tot[c], self.full[c], self._alloc_tot[c]
        for r, v in gang.total_pairs:
            tot[r] -= v
            full[r] = (alloc[r] - tot[r]) / alloc[r]
        for (dims, spread, keep), keys in self._scores.items():
            keys[c] = self._rank_key(c, dims, spread, keep)
        self._version[c] += 1
        self._log.append(c)
        if self.schedulable[c]:
            free_sum = self.free_sum
            for r, v in gang.total_pairs:
                free_sum[r] -= v

    def release(self, c: int, freed: Mapping[int, Sequence[int]]) -> None:
        """Preempted pods leave cluster c (in a trial too): what they hold per node is free again.
        Free grew, so what this cycle learnt of misfits and rankings is forgotten (rare)."""
        self._save(c)
        rows, tot = self.rows[c], self.tot[c]
        for i, add in freed.items():
            rows[i] = [a + b for a, b in zip(rows[i], add, strict=True)]
            for r, v in enumerate(add):
                tot[r] += v
                if self.schedulable[c]:
                    self.free_sum[r] += v
        self.full[c] = self._fullness(c)
        for (dims, spread, keep), keys in self._scores.items():
            keys[c] = self._rank_key(c, dims, spread, keep)
        self._misfit[c].clear()
        self._cursor[c].clear()
        self._ranks.clear()
        self._dropped.clear()
        self._version[c] += 1
        self._log.append(c)

    def _save(self, c: int) -> None:
        if self.ledger.open:
            self.ledger.save_once(self._keys[c], partial(self._copy, c))

    def _copy(self, c: int) -> Undo:
        """Cluster c as it is (rows are replaced, never changed in place), and how to put it back."""
        got = (list(self.rows[c]), self.tot[c][:], self.full[c][:], dict(self._cursor[c]))
        return partial(self._put_back, c, _Saved(*got, set(self._misfit[c])))

    def _put_back(self, c: int, saved: _Saved) -> None:
        """Cluster c as it was, what this cycle had learnt of it (misfits, cursors) included."""
        if self.schedulable[c]:
            for r, (was, now) in enumerate(zip(saved.tot, self.tot[c], strict=True)):
                self.free_sum[r] += was - now
        self.rows[c][:], self.tot[c][:], self.full[c][:] = saved.rows, saved.tot, saved.full
        self._cursor[c], self._misfit[c] = saved.cursor, saved.misfit  # copies: the undo's own
        for (dims, spread, keep), keys in self._scores.items():
            keys[c] = self._rank_key(c, dims, spread, keep)
        self._version[c] += 1
        # Not a commit: order()'s shortcut for one (the cluster first in line only got fuller)
        # does not hold (-1 is no cluster), so rankings re-sort the clusters logged.
        self._log += (c, -1)

    def take_unplaced(self, prepare: Callable[[Gang], PreparedGang]) -> None:
        """Take the capacity of gangs dispatched earlier whose pods are not on nodes yet
        (ClusterSnap.unplaced). A gang that no longer fits whole takes what fits, pod by pod."""
        for c, snap in enumerate(self.snaps):
            for spec in snap.unplaced:
                gang = prepare(spec)
                placement = self.fit(c, gang)
                if placement is not None:
                    self.commit(c, placement, gang)
                    continue
                for shape in gang.shapes:
                    pod = prepare(((self.index.vector(shape.row.tolist()), 1),))
                    for _ in range(shape.count):
                        one = self.fit(c, pod)
                        if one is None:
                            break
                        self.commit(c, one, pod)

    # --- reasons and whole-capacity checks -----------------------------------------------------
    def best_effort(self, cand: Candidates, gang: PreparedGang) -> str:
        """Which candidate came closest to holding the gang, and what it had."""
        if not cand.ids:
            return f"no candidate cluster; {cand.note}" if cand.note else "no candidate cluster"
        wanted = sum(s.count for s in gang.shapes)
        c, placed = closest(self, cand, gang)
        first = gang.shapes[0] if gang.shapes else None
        text = f"best: {self.names[c]} can hold {placed} of the {wanted} pods"
        if first is not None and first.dims.size:
            free = self.free(c)
            rooms = int(((free[:, first.dims] >= first.row[first.dims]).all(axis=1)).sum())
            text += f" ({rooms} nodes have {fmt_row(self.index, first.row.tolist())} free)"
        short = np.maximum(gang.total - self.total_free(c), 0)
        if short.any():
            text += f", lacks {fmt_row(self.index, short.tolist())} in total"
        return f"{text}; {cand.note}" if cand.note else text

    def fits_allocatable(self, cand: Candidates, gang: PreparedGang) -> list[int]:
        """Candidates whose whole capacity (ignoring current usage) could hold the gang."""
        got = self._whole.get((cand.key, gang.tag))
        if got is not None:
            return got
        out = self._whole[(cand.key, gang.tag)] = []
        for c in cand.ids:
            key = (self._inventory[c], gang.tag)
            ok = self._fits_empty.get(key)
            if ok is None:
                ok = bool((self.total_alloc[c] >= gang.total).all())
                ok = self._fits_empty[key] = ok and pack(self.alloc[c], gang.shapes)[1] is not None
            if ok:
                out.append(c)
        return out

    def node_names(self, c: int, rows: Iterable[int]) -> tuple[str, ...]:
        """The names of cluster c's node rows, in row order (`node_order`: real nodes by name first)."""
        names = list(self.node_col[c])  # built in row order
        return tuple(names[r] for r in sorted(rows))

    def describe(self, gang: PreparedGang) -> str:
        return fmt_gang(self.index, gang.described)


