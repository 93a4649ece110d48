"""Checks per job (DESIGN 5.3 step 3) and the usage they read, kept current as jobs are admitted.

A job passes when its request fits what all schedulable clusters have together; when usage plus
request stays within realCap at its leaf and every ancestor; and when the free capacity left after
other queues' unmet guarantees still holds it. Usage only grows within a cycle, which the memos
rely on: a request over a limit stays over it, and one that passed passes again until the next
admission.
"""

from __future__ import annotations

from functools import partial

from vglobal.admission.explain import capability_reason, capacity_reason, guarantee_reason
from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.fit.placement import Clusters
from vglobal.admission.prepare import Job, Leaf
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import Wait
from vglobal.model.reasons import WaitKind


class Checks:
    """Capability and guarantee checks over the queue tree's usage (tree.alloc), which charge()
    raises along a queue's path for every admission."""

    def __init__(self, tree: QueueTree, index: ResourceIndex, clusters: Clusters) -> None:
        self.tree, self.index, self.clusters = tree, index, clusters
        self._ledger = clusters.ledger
        n = len(tree.names)
        self.cap_rows: list[list[int]] = [rc.tolist() for rc in tree.real_cap]  # exact ints
        self.charges = 0  # admissions so far this cycle: a memo of a passed check holds until it moves
        self.admitted = [0] * n  # per queue, its own jobs admitted this cycle
        self._limits_of: dict[int, list[tuple[int, int, int]]] = {}
        self._reasons: dict[tuple[int, int, int, int], Wait] = {}
        # Unmet guarantees: need(q) = max(pos(guarantee - allocated), sum of the children's needs).
        self.guarded = any(any(g) for g in tree.guarantee)
        self.need = [[0] * index.size for _ in tree.names]
        self.need_sum = [[0] * index.size for _ in tree.names]
        # Queues with a guarantee at or below them: the only ones whose need can be non-zero.
        self.guards = [False] * n
        self._need_version = 0
        if self.guarded:
            for i in reversed(tree.order[1:]):
                if any(tree.guarantee[i]) or any(self.guards[k] for k in tree.children[i]):
                    self.guards[i] = True
                    self._refresh_need(i)
        self._held: dict[int, tuple[int, list[int]]] = {}

    # --- capability ------------------------------------------------------------------------------
    def capability(self, job: Job, leaf: Leaf) -> Wait | None:
        """Why the job's request does not fit its queues' limits now, or None if it does."""
        got = leaf.over_cap.get(job.rid)
        if got is not None:
            return got
        if leaf.cap_ok.get(job.rid) == self.charges:
            return None
        req = job.req
        capacity = self.cap_rows[0]
        for r in job.dims:
            if req[r] > capacity[r]:
                got = leaf.over_cap[job.rid] = Wait(
                    WaitKind.ExceedsCapacity, capacity_reason(self.index, r, capacity[r], req[r])
                )
                return got
        alloc = self.tree.alloc
        # Top-down, so a limit a leaf only inherits is reported at the queue that sets it.
        for q, r, cap in self._limits(job.leaf):
            need = req[r]
            if need and alloc[q][r] + need > cap:
                a = alloc[q][r]
                key = (q, r, a, need)
                got = self._reasons.get(key)
                if got is None:
                    explicit = bool(self.tree.capability[q][r] <= cap)
                    got = Wait(
                        WaitKind.Capability,
                        capability_reason(self.tree.names[q], self.index, r, cap, a, need, explicit),
                    )
                    self._reasons[key] = got
                leaf.over_cap[job.rid] = got
                return got
        leaf.cap_ok[job.rid] = self.charges
        return None

    def _limits(self, leaf: int) -> list[tuple[int, int, int]]:
        """(queue, resource, realCap) to check for a leaf's jobs, top-down below root.

        A queue whose realCap on a resource equals its parent's is implied by the parent's check
        (its usage is part of the parent's), so only the queue that sets a limit is checked.
        """
        got = self._limits_of.get(leaf)
        if got is None:
            got = []
            tree, caps = self.tree, self.cap_rows
            for q in reversed(tree.path[leaf]):
                p = tree.parent[q]
                for r in range(self.index.size):
                    if p == 0 or caps[q][r] < caps[p][r]:
                        got.append((q, r, caps[q][r]))
            self._limits_of[leaf] = got
        return got

    def excess(self, job: Job) -> list[int]:
        """Per resource, by how much the job's request exceeds a limit on its queue path now: what
        preemption inside its leaf must give back (0 everywhere: the limits hold it). Exact: a
        victim that frees just what the job needs is enough, at any size."""
        out = [0] * self.index.size
        alloc, req = self.tree.alloc, job.req
        for q, r, cap in self._limits(job.leaf):
            out[r] = max(out[r], alloc[q][r] + req[r] - cap)
        return out

    def capped_at(self, job: Job) -> int | None:
        """The deepest queue above the job's leaf whose limit its request exceeds now, where reclaim
        between that queue's children may make room; None if the leaf's own limit is exceeded, or
        none is."""
        alloc, req, deepest = self.tree.alloc, job.req, None
        for q, r, cap in self._limits(job.leaf):  # top-down: a later queue is a deeper one
            if req[r] and alloc[q][r] + req[r] > cap:
                if q == job.leaf:
                    return None
                deepest = q
        return deepest

    # --- guarantees ------------------------------------------------------------------------------
    def guarantees(self, job: Job) -> Wait | None:
        """Why other queues' unmet guarantees leave too little free for the job, or None."""
        held = self._held_back(job.leaf)
        if not any(held):
            return None
        free = self.clusters.free_total()
        for r in job.dims:
            need = job.req[r]
            if held[r] > 0 and free[r] - held[r] < need:
                return Wait(WaitKind.Guarantee, guarantee_reason(self.index, r, free[r], held[r], need))
        return None

    def _held_back(self, leaf: int) -> list[int]:
        """Unmet guarantees of queues outside this leaf's path: capacity this job may not use."""
        got = self._held.get(leaf)
        if got is not None and got[0] == self._need_version:
            return got[1]
        out = [0] * self.index.size
        tree = self.tree
        for q in tree.path[leaf]:
            siblings = self.need_sum[tree.parent[q]]
            mine = self.need[q]
            out = [o + s - m for o, s, m in zip(out, siblings, mine, strict=True)]
        self._held[leaf] = (self._need_version, out)
        return out

    def _refresh_need(self, q: int) -> None:
        """need(q) = max(pos(guarantee - allocated), sum of children's needs); keeps parents' sums."""
        g, a, kids = self.tree.guarantee[q], self.tree.alloc[q], self.need_sum[q]
        new = [max(gv - av, ks, 0) for gv, av, ks in zip(g, a, kids, strict=True)]
        old = self.need[q]
        if new == old:
            return
        p = self.tree.parent[q]
        self.need_sum[p] = [s + n - o for s, n, o in zip(self.need_sum[p], new, old, strict=True)]
        self.need[q] = new
        self._need_version += 1

    def release(self, leaf: int, freed: list[int]) -> None:
        """Preempted pods of the leaf gave their charge back (up the path and at root); undone
        with the ledger's checkpoint by giving it to them again."""
        self._ledger.undo_with(partial(self.release, leaf, [-x for x in freed]))
        self.charges += 1  # passed checks were memoised against the old usage
        tree = self.tree
        for q in [*tree.path[leaf], 0]:
            a = tree.alloc[q]
            for r, v in enumerate(freed):
                a[r] -= v
            if q and self.guards[q]:
                self._refresh_need(q)

    # --- admissions ------------------------------------------------------------------------------
    def charge(self, job: Job) -> None:
        """The job was admitted: its request counts as usage of its queue, the ancestors and root."""
        if self._ledger.open:
            self._ledger.undo_with(partial(self._uncharge, job))
        self.charges += 1
        self.admitted[job.leaf] += 1
        tree = self.tree
        req = job.req
        guards = self.guards
        for q in tree.path[job.leaf]:
            a = tree.alloc[q]
            for r in job.dims:
                a[r] += req[r]
            if guards[q]:
                self._refresh_need(q)
        root = tree.alloc[0]
        for r in job.dims:
            root[r] += req[r]

    def _uncharge(self, job: Job) -> None:
        """A charge taken back (the ledger's rollback)."""
        self.admitted[job.leaf] -= 1
        self.release(job.leaf, job.req)
