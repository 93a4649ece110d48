"""Cross-cluster reclaim: whole running jobs taken back from queues above their deserved share.

A victim's queue must stay at or above both its deserved and its guarantee after losing it (so a
guarantee is never taken). Victims are planned on ONE cluster, enough for the gang to fit there once
they stop. Within a cluster, nodes are opened greedily by how few victims free room for one more pod
of the gang's biggest shape; on a node, victims go lowest priority first, then newest, then uid.
The cluster needing the fewest victims wins, then the name.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vglobal.admission.index import FloatArray, IntArray, ResourceIndex
from vglobal.admission.placement import Clusters, PreparedGang, Shape, pack
from vglobal.admission.snapshot import RunningJob
from vglobal.admission.tree import QueueTree


@dataclass(frozen=True, slots=True)
class Victim:
    uid: str
    queue: int
    req: IntArray
    node: int  # the node that holds most of it; the greedy groups victims by it
    rows: IntArray  # node rows of its cluster
    usage: IntArray  # what it uses on each of those rows
    rank: int  # position in victim order (lowest priority, newest, uid)


class _ClusterVictims:
    def __init__(self, victims: list[Victim], size: int) -> None:
        self.victims = victims
        self.queue = np.array([v.queue for v in victims], dtype=np.int64)
        self.req = np.array([v.req for v in victims], dtype=np.int64).reshape(len(victims), size)
        self.taken = np.zeros(len(victims), dtype=bool)
        self.node = np.array([v.node for v in victims], dtype=np.int64)
        self.by_node: dict[int, list[int]] = {}
        for k, v in enumerate(victims):
            self.by_node.setdefault(v.node, []).append(k)
        # Every (victim, node row, usage) triple, to add up what a set of victims frees in one call.
        self.owner = np.concatenate([np.full(v.rows.size, k) for k, v in enumerate(victims)]).astype(np.int64)
        self.rows = np.concatenate([v.rows for v in victims]).astype(np.int64)
        self.usage = np.concatenate([v.usage for v in victims]).reshape(-1, size)


class ReclaimPlanner:
    def __init__(
        self, running: Sequence[RunningJob], tree: QueueTree, clusters: Clusters, index: ResourceIndex
    ) -> None:
        self.tree = tree
        self.clusters = clusters
        grouped: dict[int, list[Victim]] = {}
        for job in sorted(running, key=lambda j: (j.priority, -j.created, j.uid)):
            q = tree.idx.get(job.queue)
            c = clusters.col.get(job.cluster)
            if q is None or c is None or not tree.is_leaf[q] or not tree.reclaimable[q]:
                continue
            node_col = clusters.node_col[c]
            placed = [
                (node_col[n], index.known_row(v)) for n, v in sorted(job.placements.items()) if n in node_col
            ]
            if not placed:
                continue  # frees no node we know of, so it cannot help a gang fit
            main = max(placed, key=lambda p: (sum(p[1]), -p[0]))[0]
            grouped.setdefault(c, []).append(
                Victim(
                    job.uid,
                    q,
                    np.array(index.known_row(job.request), dtype=np.int64),
                    main,
                    np.array([p[0] for p in placed], dtype=np.int64),
                    np.array([p[1] for p in placed], dtype=np.int64),
                    len(grouped.get(c, ())),
                )
            )
        self.by_cluster = {c: _ClusterVictims(v, index.size) for c, v in grouped.items()}
        floor = [
            np.maximum(d, np.array(g, dtype=np.float64))
            for d, g in zip(tree.deserved, tree.guarantee, strict=True)
        ]
        self._floor: FloatArray = np.array(floor).reshape(len(tree.names), index.size)
        self._given = np.zeros_like(self._floor)  # usage each queue already gives back this cycle

    def slack(self) -> FloatArray:
        """Per queue: how much it may still lose before reaching max(deserved, guarantee)."""
        alloc = np.array(self.tree.alloc, dtype=np.float64).reshape(self._floor.shape)
        return alloc - self._given - self._floor

    def plan(
        self, reclaimer: int, cand: Sequence[int], gang: PreparedGang
    ) -> tuple[int, list[Victim]] | None:
        """Fewest victims on one cluster that let the gang fit there; None if no cluster works."""
        if not gang.shapes:
            return None
        slack = self.slack()
        best: tuple[int, int, list[Victim]] | None = None
        for c in cand:
            cv = self.by_cluster.get(c)
            if cv is None:
                continue
            # Victims whose queue may lose them, judged alone; the greedy re-checks as it takes them.
            ok = (
                ((cv.req <= slack[cv.queue]) | (cv.req == 0)).all(axis=1)
                & (cv.queue != reclaimer)
                & ~cv.taken
            )
            if not ok.any():
                continue
            chosen = self._plan_cluster(c, cv, ok, slack, gang, best)
            if chosen is not None and (best is None or len(chosen) < best[0]):
                best = (len(chosen), c, chosen)
        if best is None:
            return None
        _, c, chosen = best
        cv = self.by_cluster[c]
        for v in chosen:
            cv.taken[v.rank] = True
            self._given[v.queue] += v.req
        return c, chosen

    def _plan_cluster(
        self,
        c: int,
        cv: _ClusterVictims,
        ok: npt.NDArray[np.bool_],
        slack: FloatArray,
        gang: PreparedGang,
        best: tuple[int, int, list[Victim]] | None,
    ) -> list[Victim] | None:
        free = self.clusters.free[c].copy()
        if ((self.clusters.total_free[c] + cv.req[ok].sum(axis=0)) < gang.total).any():
            return None
        potential = free.copy()
        flat = ok[cv.owner]
        np.add.at(potential, cv.rows[flat], cv.usage[flat])
        if pack(potential, gang.shapes)[1] is None:
            return None
        slack = slack.copy()
        big = gang.shapes[0]
        eligible = np.flatnonzero(ok)  # rank order
        nodes, first = np.unique(cv.node[eligible], return_index=True)
        by_node: dict[int, list[Victim]] = {}

        def node_victims(n: int) -> list[Victim]:
            got = by_node.get(n)
            if got is None:
                got = by_node[n] = [cv.victims[k] for k in cv.by_node[n] if ok[k]]
            return got

        # Lazy greedy over nodes keyed by (victims needed for one more pod, rank of the last of
        # them): a node starts at its lower bound (one victim, its first victim's rank); its exact
        # key is computed when it reaches the top, and it goes back in if that is more.
        heap = [(1, int(eligible[f]), int(n)) for n, f in zip(nodes, first, strict=True)]
        heapq.heapify(heap)
        chosen: list[Victim] = []
        limit = best[0] if best is not None else None
        while heap:
            cost, rank, node = heapq.heappop(heap)
            victims = node_victims(node)
            walk = _walk(free, node, victims, big, slack)
            if not walk:
                continue
            if (len(walk), walk[-1].rank) != (cost, rank):
                heapq.heappush(heap, (len(walk), walk[-1].rank, node))
                continue
            for v in walk:
                victims.remove(v)
                chosen.append(v)
                np.add.at(free, v.rows, v.usage)
                slack[v.queue] -= v.req
            if limit is not None and len(chosen) >= limit:
                return None
            if pack(free, gang.shapes)[1] is not None:
                return chosen
            if victims:
                heapq.heappush(heap, (1, victims[0].rank, node))
        return None


def _room(row: IntArray, shape: Shape) -> int:
    d = shape.dims
    return int((row[d] // shape.row[d]).min()) if d.size else 1 << 30


def _may_lose(v: Victim, slack: FloatArray, lost: dict[int, IntArray]) -> bool:
    """The victim's queue keeps max(deserved, guarantee) after losing it (and what it lost so far)."""
    room = slack[v.queue] - lost[v.queue] if v.queue in lost else slack[v.queue]
    return bool(((v.req <= room) | (v.req == 0)).all())


def _walk(free: IntArray, node: int, victims: list[Victim], shape: Shape, slack: FloatArray) -> list[Victim]:
    """The fewest of `victims`, in order, whose removal makes room for one more pod on the node."""
    target = _room(free[node], shape) + 1
    row = free[node].copy()
    lost: dict[int, IntArray] = {}
    taken: list[Victim] = []
    for v in victims:
        if not _may_lose(v, slack, lost):
            continue
        taken.append(v)
        lost[v.queue] = lost[v.queue] + v.req if v.queue in lost else v.req
        row += v.usage[v.rows == node].sum(axis=0)
        if _room(row, shape) >= target:
            return taken
    return []
