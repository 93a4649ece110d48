"""Cross-cluster reclaim of whole running jobs from queues above their deserved share: the victim
planner.

A queue may lose a victim by Volcano's Reclaimable rule (capacity and proportion plugins): it keeps
its guarantee without the victim, and, counting the victims it already gives up, its allocation is
above its deserved on some resource the victim requests that the reclaimer is short of (or its
deserved names none of the victim's resources). A whole job's pods go one by one by that rule, as
Volcano's gang reclaim checks a whole victim's tasks: the queue must still be above its deserved
before the job's last (smallest) pod goes. Victim queues go lowest priority, highest share first.
Victims are planned on ONE cluster,
enough for the gang to fit there once they stop. Within a cluster, nodes are opened greedily by how
few victims free room for one more pod of the gang's biggest shape; on a node, victims go lowest
priority first, then newest, then the greatest uid. Of the few most promising clusters, the one needing the
fewest victims wins (ties: the more promising, then the name).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from vglobal.admission.fit.gang import PreparedGang, pack
from vglobal.admission.fit.index import FloatArray, IntArray, ResourceIndex
from vglobal.admission.fit.node_mask import BoolArray, NodeMask, everywhere
from vglobal.admission.fit.placement import Clusters
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import RunningJob
from vglobal.admission.victims.ask import CardCheck
from vglobal.admission.victims.losable import set_deserved
from vglobal.admission.victims.victim_walk import QueueRows, Victim, walk_node
from vglobal.admission.victims.worth import Worth
from vglobal.model.resources import ResourceVector

# Reclaim plans per cycle (each searches the victims of a few candidate clusters); a cycle runs
# every second or so, so later plans only wait one cycle.
MAX_RECLAIM_PLANS = 16
POD_SLOTS = "pods"  # a node's pod slots: every pod takes one, no queue is short of them


@dataclass(slots=True)
class _Pending:
    """One cluster's victims as plain lists while the snapshot is read; arrays are built once."""

    uids: list[str]
    queues: list[int]
    reqs: list[list[int]]
    nodes: list[int]
    spans: list[tuple[int, int]]
    rows: list[int]
    usage: list[list[int]]
    lasts: list[list[int]]


class _ClusterVictims:
    def __init__(self, p: _Pending, size: int) -> None:
        n = len(p.uids)
        self.queue = np.array(p.queues, dtype=np.int64)
        self.req = np.array(p.reqs, dtype=np.int64).reshape(n, size)
        self.node = np.array(p.nodes, dtype=np.int64)
        # Every (victim, node row, usage) triple, to add up what a set of victims frees in one call.
        self.rows = np.array(p.rows, dtype=np.int64)
        self.usage = np.array(p.usage, dtype=np.int64).reshape(len(p.rows), size)
        self.owner = np.repeat(np.arange(n, dtype=np.int64), [b - a for a, b in p.spans])
        self.last = np.array(p.lasts, dtype=np.int64).reshape(n, size)
        self.taken = np.zeros(n, dtype=bool)
        self.victims = []
        for k, (uid, q, node, (a, b)) in enumerate(zip(p.uids, p.queues, p.nodes, p.spans, strict=True)):
            here = [0] * size
            for row, use in zip(p.rows[a:b], p.usage[a:b], strict=True):
                if row == node:
                    here = [x + y for x, y in zip(here, use, strict=True)]
            self.victims.append(
                Victim(
                    uid, q, self.req[k], node, self.rows[a:b], self.usage[a:b], k, p.reqs[k], here, p.lasts[k]
                )
            )
        self.by_node: dict[int, list[int]] = {}
        for k, node in enumerate(p.nodes):
            self.by_node.setdefault(node, []).append(k)


def _victim_order(
    jobs: list[RunningJob], queue_key: dict[str, tuple[int, float]], worth: Worth | None = None
) -> list[RunningJob]:
    """Victim queues first (lowest priority, highest share: Volcano's victim queue order), then
    lowest priority, away runs (placement stages), newest, the greatest uid (its job order
    reversed); stable sorts, last key first. The worth rule orders by its own key."""
    if worth is not None:
        return sorted(jobs, key=worth.order_key)
    out = sorted(jobs, key=attrgetter("uid"), reverse=True)
    out.sort(key=attrgetter("created"), reverse=True)
    out.sort(key=attrgetter("away"), reverse=True)
    out.sort(key=attrgetter("priority"))
    out.sort(key=lambda j: queue_key[j.queue])
    return out


# Clusters searched per plan (best first by free plus reclaimable room): the search is the costly
# part, and a cluster further down rarely needs fewer victims.
CLUSTERS_PER_PLAN = 3


class ReclaimPlanner:
    def __init__(
        self,
        running: Sequence[RunningJob],
        tree: QueueTree,
        clusters: Clusters,
        index: ResourceIndex,
        protected_after: float | None = None,
        limit: float = 0.0,
        used: FloatArray | None = None,
        taken: set[str] | None = None,
        worth: Worth | None = None,
    ) -> None:
        """`protected_after`: runs admitted after this time (epoch seconds) are not victims.
        `limit`: the reclaim rate limit (AdmissionPolicy.reclaim_limit), 0 = none. `used`: per queue, its
        decayed share (fair share over time); a queue then takes only from queues that used as
        much or more, else what it takes back the order would hand back again at once. `taken`:
        job and pod uids other planners took this cycle (shared, and added to). `worth`: the worth
        rule (worth.py): protected queues give no victims, victims are ordered and priced by it."""
        self._taken: set[str] = set() if taken is None else taken
        self.worth = worth
        self.tree = tree
        self._used = used
        self.clusters = clusters
        self._des_rows = set_deserved(tree, index)
        deserved = np.array(self._des_rows, dtype=np.int64).reshape(len(tree.names), index.size)
        self._deserved = deserved
        self._guarantee: IntArray = np.array(tree.guarantee, dtype=np.int64).reshape(deserved.shape)
        self._slots = index.col.get(POD_SLOTS, -1)
        self._given = np.zeros_like(deserved)  # usage each queue already gives back this cycle
        # The rate limit as a second floor: what a queue may still lose in this interval (Armada's
        # fair-share preemption limit): `limit` of what it ran at the interval's start, less what
        # reclaim took from it since.
        self._budget: IntArray | None = None
        if limit > 0:
            took = np.array([index.known_row(q.reclaimed) for q in tree.snaps], dtype=np.int64)
            ran = np.array(tree.initial_alloc, dtype=np.int64).reshape(deserved.shape) + took
            self._budget = np.floor(limit * ran).astype(np.int64) - took
        # Only queues above their deserved on some resource (pod slots aside) can lose jobs at all.
        over = self.left() > deserved
        if self._slots >= 0:
            over[:, self._slots] = False
        queues = range(len(tree.names))
        donors = {q for q in queues if tree.is_leaf[q] and tree.reclaimable[q] and bool(over[q].any())}
        # The worth rule's donors (worth.may_lose): a plan it judges takes only from them; a plan
        # within the reclaimer's guarantee takes from any donor.
        self._judged_donor = np.array([worth is None or worth.may_lose(q) for q in queues], dtype=bool)
        donor_names = {tree.names[q] for q in donors}
        candidates = [
            j
            for j in running
            if j.queue in donor_names
            and j.cluster in clusters.col
            and (protected_after is None or j.running_since is None or j.running_since <= protected_after)
            and not j.pinned
            and not j.holds_pinned
            and all(p.preemptable for p in j.pods)  # a pod annotated preemptable "false" never goes
        ]
        self._index = index
        self._rows: dict[ResourceVector, list[int]] = {}  # jobs repeat a few shapes: convert each once
        # Victims per cluster; a cluster's are put in victim order and made arrays when a plan first
        # looks there (plans look at a few clusters each, most cycles at a few clusters in all).
        self._groups: dict[int, list[RunningJob]] = {}
        # What each cluster's victims hold in all: counted per (cluster, request) first, since
        # jobs repeat a few requests (the hub shares one object per distinct value).
        col, groups = clusters.col, self._groups
        counts: dict[tuple[int, int, bool], int] = {}
        requests: dict[int, ResourceVector] = {}
        judged_donor, idx = self._judged_donor, tree.idx
        for job in candidates:
            if not job.placements:
                continue  # frees no node we know of, so it cannot help a gang fit
            c = col[job.cluster]
            got = groups.get(c)
            if got is None:
                got = groups[c] = []
            got.append(job)
            key = (c, id(job.request), bool(judged_donor[idx[job.queue]]))
            if key in counts:
                counts[key] += 1
            else:
                counts[key] = 1
                requests[key[1]] = job.request
        # Per cluster, what all its victims hold (index True) and what those of the worth rule's
        # donors hold (index False: a plan it judges weighs clusters by these alone).
        sums: dict[tuple[int, bool], list[int]] = {}
        for (c, rid, judged), n in counts.items():
            for part in (True, False) if judged else (True,):
                acc = sums.setdefault((c, part), [0] * index.size)
                for k, v in enumerate(self._row(requests[rid])):
                    acc[k] += n * v
        self._req_sum = {key: np.array(acc, dtype=np.int64) for key, acc in sums.items()}
        self._built: dict[int, _ClusterVictims] = {}
        self._queue_key: dict[str, tuple[int, float]] | None = None  # made with the first victims

    def _row(self, vec: ResourceVector) -> list[int]:
        got = self._rows.get(vec)
        if got is None:
            got = self._rows[vec] = self._index.known_row(vec)
        return got

    def victims(self, c: int) -> _ClusterVictims:
        """Cluster c's victims as arrays (see _ClusterVictims), built on first use."""
        got = self._built.get(c)
        if got is not None:
            return got
        tree, row = self.tree, self._row
        node_col = self.clusters.node_col[c]
        acc = _Pending([], [], [], [], [], [], [], [])
        if self._queue_key is None:
            self._queue_key = {name: (tree.priority[q], -self._share(q)) for q, name in enumerate(tree.names)}
        for job in _victim_order(self._groups.get(c, []), self._queue_key, self.worth):
            placed = [(node_col[n], row(v)) for n, v in job.placements.items() if n in node_col]
            if not placed:
                continue
            placed.sort()
            main = max(placed, key=lambda p: (sum(p[1]), -p[0]))[0]
            acc.uids.append(job.uid)
            acc.queues.append(tree.idx[job.queue])
            acc.reqs.append(row(job.request))
            acc.nodes.append(main)
            start = len(acc.rows)
            acc.rows.extend(p[0] for p in placed)
            acc.usage.extend(p[1] for p in placed)
            acc.spans.append((start, len(acc.rows)))
            # Its smallest pod; with its pods not known one by one, what it uses on its least-used node.
            shapes = [row(p.request) for p in job.pods] or [u for _, u in placed]
            acc.lasts.append(min(shapes, key=sum))
        got = self._built[c] = _ClusterVictims(acc, self._index.size)
        return got

    def _share(self, q: int) -> float:
        """Queue q's share: its allocation over its deserved, on the resource where that is most."""
        pairs = zip(self.tree.alloc[q], self._des_rows[q], strict=True)
        return max((a / d for a, d in pairs if d > 0), default=1.0)

    def left(self) -> IntArray:
        """Per queue: its allocation less what it already gives back this cycle, exact."""
        alloc = np.array(self.tree.alloc, dtype=np.int64).reshape(self._given.shape)
        out: IntArray = alloc - self._given
        return out

    def plan(
        self,
        reclaimer: int,
        cand: Sequence[int],
        gang: PreparedGang,
        short: BoolArray,
        cards: CardCheck | None = None,
        mask: NodeMask = everywhere,
        pays: Callable[[list[Victim]], bool] | None = None,
        judged: bool = True,
    ) -> tuple[int, list[Victim]] | None:
        """Fewest victims on one cluster that let the gang fit there, on the nodes `mask` leaves
        it; None if no cluster works. `short`: per resource, whether the reclaim is for it
        (Reclaims.short): a victim's queue must be above its deserved on one of them. `pays`:
        whether a plan's victims are worth taking (worth.py); a plan that does not is no plan.
        `judged`: False for a reclaim within the reclaimer's guarantee, which Volcano's rule alone
        decides (no worth donors, no decayed shares)."""
        if not gang.shapes:
            return None
        left = self.left()
        budget = None if self._budget is None else self._budget - self._given
        best: tuple[int, int, list[Victim]] | None = None
        tried = 0
        for c in self._by_promise(cand, gang, not judged or self.worth is None):
            if tried == CLUSTERS_PER_PLAN:
                break
            cv = self.victims(c)
            # Victims whose queue may lose them, judged alone; the greedy re-checks as it takes them.
            ok = self._reclaimable(cv, left, budget, short) & (cv.queue != reclaimer) & ~cv.taken
            if self._taken:
                ok &= np.array([v.uid not in self._taken for v in cv.victims], dtype=bool)
            if judged and self.worth is not None:
                ok &= self._judged_donor[cv.queue]
            if judged and self._used is not None:
                ok &= self._used[cv.queue] >= self._used[reclaimer]
            if pays is not None:  # a victim not worth taking alone is not worth taking with others
                ok &= np.array([pays([v]) for v in cv.victims], dtype=bool)
            keep = mask(c).open_rows(len(self.clusters.rows[c]))
            if keep is not None:  # only victims with pods where the gang may go count
                touches = np.zeros(ok.shape[0], dtype=bool)
                touches[cv.owner[keep[cv.rows]]] = True
                ok &= touches
            if not ok.any():
                continue
            tried += 1
            rows = QueueRows(left, budget, self._des_rows, self.tree.guarantee, self._slots, short.tolist())
            chosen = self._plan_cluster(c, cv, ok, rows, gang, best, cards, keep)
            if chosen is not None and pays is not None and not pays(chosen):
                chosen = None
            if chosen is not None and (best is None or len(chosen) < best[0]):
                best = (len(chosen), c, chosen)
                if best[0] == 1:
                    break  # no plan needs fewer
        if best is None:
            return None
        _, c, chosen = best
        cv = self.victims(c)
        set_at = self.clusters.ledger.set_at
        self.clusters.ledger.add(self._taken, [v.uid for v in chosen])
        for v in chosen:
            set_at(cv.taken, v.rank, True)
            set_at(self._given, v.queue, self._given[v.queue] + v.req)
        return c, chosen

    def packed_rows(
        self, c: int, chosen: Sequence[Victim], gang: PreparedGang, mask: NodeMask = everywhere
    ) -> set[int]:
        """The node rows of cluster c the gang packs onto once `chosen` are gone: with the victims'
        own, the room its claim holds (free room it counts on, left open, would go to others)."""
        free = self.clusters.free(c).copy()
        keep = mask(c).open_rows(len(self.clusters.rows[c]))
        if keep is not None:
            free[~keep] = 0
        for v in chosen:
            np.add.at(free, v.rows, v.usage if keep is None else v.usage * keep[v.rows][:, None])
        after = pack(free, gang.shapes)[1]
        if after is None:
            return set()
        return {int(r) for r in np.flatnonzero((after != free).any(axis=1))}

    def _reclaimable(
        self, cv: _ClusterVictims, left: IntArray, budget: IntArray | None, short: BoolArray
    ) -> npt.NDArray[np.bool_]:
        """Victims their queue may lose, each judged alone (Volcano's Reclaimable rule, see the
        module's text); the greedy re-checks as it takes them."""
        req, q, last = cv.req, cv.queue, cv.last
        alloc, des, guarantee = left[q], self._deserved[q], self._guarantee[q]
        keeps = ((guarantee <= alloc - req) | (guarantee <= 0)).all(axis=1)
        relevant = (last > 0) & (des > 0)
        if self._slots >= 0:
            relevant[:, self._slots] = False
        above = relevant & (alloc - req + last > des)  # before its last pod goes
        over = (above & short).any(axis=1) | ~relevant.any(axis=1)
        ok: npt.NDArray[np.bool_] = np.asarray(keeps & over, dtype=bool)
        if budget is not None:  # the rate limit: what a queue may still lose in this interval
            ok = ok & np.asarray(((req <= budget[q]) | (req == 0)).all(axis=1), dtype=bool)
        return ok

    def _by_promise(self, cand: Sequence[int], gang: PreparedGang, every: bool = True) -> list[int]:
        """Candidates with victims, most free-plus-reclaimable room for the gang first, then name.
        `every`: counting every victim, else only the worth rule's donors'."""
        sums = self._req_sum
        have = [c for c in cand if (c, every) in sums]
        if not have:
            return []
        dims = gang.dims
        room = np.array([(self.clusters.total_free(c)[dims] + sums[c, every][dims]) for c in have]).reshape(
            len(have), dims.size
        ) / np.maximum(gang.total[dims], 1)
        order = np.lexsort((np.array(have), -room.min(axis=1)))
        return [have[i] for i in order.tolist()]

    def _plan_cluster(
        self,
        c: int,
        cv: _ClusterVictims,
        ok: npt.NDArray[np.bool_],
        rows: QueueRows,
        gang: PreparedGang,
        best: tuple[int, int, list[Victim]] | None,
        cards: CardCheck | None = None,
        keep: BoolArray | None = None,
    ) -> list[Victim] | None:
        """`keep`: the node rows the gang may use (None: all); the others stay empty to it."""
        free = self.clusters.free(c).copy()
        if ((self.clusters.total_free(c) + cv.req[ok].sum(axis=0)) < gang.total).any():
            return None
        if keep is not None:
            free[~keep] = 0
        usage = cv.usage if keep is None else cv.usage * keep[cv.rows][:, None]
        potential = free.copy()
        flat = ok[cv.owner]
        np.add.at(potential, cv.rows[flat], usage[flat])
        if pack(potential, gang.shapes)[1] is None:
            return None
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
        # Nodes that cannot host even one more pod with all their victims gone are left out.
        d = big.dims
        more = (potential[:, d] // big.row[d]).min(axis=1) > (free[:, d] // big.row[d]).min(axis=1)
        heap = [(1, int(eligible[f]), int(n)) for n, f in zip(nodes, first, strict=True) if more[n]]
        heapq.heapify(heap)
        chosen: list[Victim] = []
        limit = best[0] if best is not None else None
        while heap:
            cost, rank, node = heapq.heappop(heap)
            if limit is not None and len(chosen) + cost >= limit:
                return None  # every node left needs at least `cost` more victims
            victims = node_victims(node)
            walk = walk_node(free, node, victims, big, rows)
            if not walk:
                continue
            if (len(walk), walk[-1].rank) != (cost, rank):
                heapq.heappush(heap, (len(walk), walk[-1].rank, node))
                continue
            for v in walk:
                victims.remove(v)
                chosen.append(v)
                np.add.at(free, v.rows, v.usage if keep is None else v.usage * keep[v.rows][:, None])
                rows.lose(v)
            if limit is not None and len(chosen) >= limit:
                return None
            fits = pack(free, gang.shapes)[1] is not None
            if fits and (cards is None or cards(c, free, [v.uid for v in chosen])):
                return chosen
            if victims:
                heapq.heappush(heap, (1, victims[0].rank, node))
        return None
