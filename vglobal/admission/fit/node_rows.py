"""Each cluster's node names and dense rows, kept from cycle to cycle per node object.

The hub's cluster cache hands an unchanged node's NodeSnap again (the same object), so a node seen
last cycle at the same place in its cluster needs neither its resource names gathered for the
index nor its free and allocatable rows converted again: at 100,000 nodes those conversions were a
fixed cost of every cycle. Nodes are compared by identity, position by position (a C-level pass),
and held here so no other object can take their identities; rows are kept for the index names
they were made in and made again when those change.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from vglobal.admission.fit.index import IntArray, ResourceIndex
from vglobal.admission.snapshot import ClusterSnap, NodeSnap

_MOST_SETS = 4096


@dataclass(slots=True)
class _Names:
    nodes: tuple[NodeSnap, ...]  # the cluster's nodes as handed in (held)
    each: list[frozenset[str]]  # per node, the resources its free and allocatable name
    names: set[str]  # all of them


@dataclass(slots=True)
class _Rows:
    nodes: tuple[NodeSnap, ...]  # the cluster's nodes in row order (held: a copy of its own)
    index: tuple[str, ...]  # the index names the rows are in
    free: list[list[int]]  # never below 0; never changed in place (placement.py replaces rows)
    alloc: IntArray  # read-only
    col: dict[str, int]  # node name -> row (read only)


class NodeRows:
    """Per cluster: its nodes' names and rows. Each cycle keeps what it used (``start``/``done``)."""

    def __init__(self) -> None:
        self._names: dict[str, _Names] = {}
        self._rows: dict[str, _Rows] = {}
        self._next_names: dict[str, _Names] = {}
        self._next_rows: dict[str, _Rows] = {}
        self._sets: dict[frozenset[str], frozenset[str]] = {}  # one object per distinct set
        self._index: tuple[str, ...] = ()
        self.reused = 0  # nodes whose rows were taken over this cycle

    def start(self) -> None:
        self._next_names, self._next_rows, self.reused = {}, {}, 0

    def done(self) -> None:
        self._names, self._rows = self._next_names, self._next_rows
        self._next_names, self._next_rows = {}, {}
        if len(self._sets) > _MOST_SETS:  # nodes' names vary without end: start afresh
            self._sets = {}

    def names(self, clusters: Iterable[ClusterSnap]) -> set[str]:
        """Every resource the clusters' nodes name."""
        out: set[str] = set()
        for c in clusters:
            prev, nodes = self._names.get(c.name), c.nodes
            if prev is not None and prev.nodes is nodes:
                got = prev
            else:
                same = _same(prev.nodes if prev is not None else (), nodes)
                each = [
                    prev.each[i] if same is not None and same[i] else self._set(n)  # type: ignore[union-attr]
                    for i, n in enumerate(nodes)
                ]
                if prev is not None and same is not None and all(same):  # a cluster of no nodes: none
                    got = _Names(nodes, each, prev.names)
                else:
                    distinct = {id(s): s for s in each}
                    got = _Names(nodes, each, set().union(*distinct.values()))
            self._next_names[c.name] = got
            out |= got.names
        return out

    def _set(self, n: NodeSnap) -> frozenset[str]:
        names = frozenset((*n.free.keys(), *n.allocatable.keys()))
        return self._sets.setdefault(names, names)

    def index(self, index: ResourceIndex) -> None:
        """The cycle's index: rows made in another are made again."""
        if index.names != self._index:
            self._index = index.names

    def rows(
        self, cluster: str, nodes: list[NodeSnap], index: ResourceIndex
    ) -> tuple[list[list[int]], IntArray, dict[str, int]]:
        """The nodes' free rows (never below 0; a list of its own, the rows shared) and their
        allocatable rows, in the index's columns, in the order given; and each node's row by name."""
        prev = self._rows.get(cluster)
        if prev is not None and prev.index is not self._index:
            prev = None
        same = _same(prev.nodes if prev is not None else (), nodes)
        if prev is not None and same is not None and all(same):
            self.reused += len(nodes)
            got = prev
        elif prev is not None and same is not None:  # some nodes changed: those rows made again
            free = list(prev.free)
            matrix = prev.alloc.copy()
            for i in np.flatnonzero(~np.array(same, dtype=bool)).tolist():
                n = nodes[i]
                free[i] = [v if v > 0 else 0 for v in index.row(n.free)]
                matrix[i] = index.row(n.allocatable)
            self.reused += sum(same)
            matrix.flags.writeable = False
            got = _Rows(tuple(nodes), self._index, free, matrix, _col(nodes, prev))
        else:
            free = [[v if v > 0 else 0 for v in index.row(n.free)] for n in nodes]
            rows = [index.row(n.allocatable) for n in nodes]
            matrix = np.array(rows, dtype=np.int64).reshape(len(nodes), index.size)
            matrix.flags.writeable = False
            got = _Rows(tuple(nodes), self._index, free, matrix, _col(nodes, None))
        self._next_rows[cluster] = got
        return list(got.free), got.alloc, got.col


def _col(nodes: list[NodeSnap], prev: _Rows | None) -> dict[str, int]:
    """Each node's row by name; last cycle's while every row holds a node of the same name."""
    if prev is not None and all(map(operator.eq, (n.name for n in prev.nodes), (n.name for n in nodes))):
        return prev.col
    return {n.name: i for i, n in enumerate(nodes)}


def _same(before: Sequence[NodeSnap], now: Sequence[NodeSnap]) -> list[bool] | None:
    """Per position, whether the node is the same object as before; None if the counts differ."""
    if len(before) != len(now):
        return None
    return list(map(operator.is_, before, now))
