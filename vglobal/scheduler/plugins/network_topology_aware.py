"""network-topology-aware: keep a gang inside one HyperNode (Volcano HEAD semantics).

A job with ``networkTopology`` is allocated HyperNode by HyperNode: tiers ascending (closest network
first), within a tier by the HyperNode score (binpack over the HyperNode, then the share of the
job's tasks already there), ties by name. The first HyperNode that makes the gang ready wins; the
tasks may use only its nodes. ``hard`` allows HyperNodes up to ``highestTierAllowed``; ``soft`` is
turned into hard with the synthetic top HyperNode allowed (as Volcano HEAD does), so it prefers one
switch and degrades to the whole cluster. A hard gang that fits nowhere stays pending with a reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from vglobal.scheduler.actions.allocate import allocate_for_tasks
from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.framework import Plugin
from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import ON_NODE, JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.nodes import FloatArray, IntArray
from vglobal.scheduler.session import Session
from vglobal.scheduler.statement import Statement
from vglobal.scheduler.topology import SUBGROUP_ORDER, TOP_HYPERNODE, TREE_CACHE, HyperNodeTree

MAX_SCORE = 100.0


def _rows(tasks: Iterable[TaskInfo]) -> list[int]:
    return [t.row for t in tasks if t.row is not None and t.status in ON_NODE]


def _job_rows(job: JobInfo) -> list[int]:
    return _rows(job.tasks.values())


class NetworkTopologyAwarePlugin(Plugin[Session]):
    name = "network-topology-aware"

    def on_session_open(self, ssn: Session) -> None:
        nodes = ssn.nodes
        tree = HyperNodeTree(ssn.hyper_nodes, nodes.row)
        ssn.cache[TREE_CACHE] = tree
        weight = self.arg_float("weight", 1.0)
        cols: list[tuple[int, float]] = []
        for res, key in (("cpu", "hypernode.binpack.cpu"), ("memory", "hypernode.binpack.memory")):
            cols.append((ssn.index.col[res], self.arg_float(key, 1.0)))
        extra = self.arguments.get("hypernode.binpack.resources")
        if isinstance(extra, str):
            for res in (r.strip() for r in extra.split(",")):
                if res in ssn.index.col:
                    cols.append(
                        (ssn.index.col[res], self.arg_float(f"hypernode.binpack.resources.{res}", 1.0))
                    )
        col_idx = np.array([c for c, _ in cols], dtype=np.int64)
        col_w = np.array([w for _, w in cols], dtype=np.float64)

        def order_for(
            tasks: Sequence[TaskInfo], placed: Sequence[TaskInfo], candidates: Mapping[str, IntArray]
        ) -> dict[str, float]:
            """Binpack of ``tasks`` over each HyperNode; ties go to where more of ``placed`` runs."""
            req = (
                np.sum([t.req for t in tasks], axis=0)[col_idx] if tasks else np.zeros(col_idx.size, np.int64)
            )
            scores: dict[str, float] = {}
            for name, rows in candidates.items():
                alloc = nodes.alloc[rows][:, col_idx].sum(axis=0)
                final = nodes.used[rows][:, col_idx].sum(axis=0) + req
                if ((final > alloc) & (col_w > 0)).any():
                    scores[name] = 0.0
                    continue
                parts = np.where(alloc > 0, final * col_w / np.maximum(alloc, 1), 0.0)
                scores[name] = float(parts.sum() / col_w.sum()) if col_w.sum() > 0 else 0.0
            best = max(scores.values(), default=0.0)
            total = len(placed) or 1
            rows_now = np.array(_rows(placed), dtype=np.int64)
            for name in [n for n, s in scores.items() if s == best]:
                there = int(np.isin(rows_now, candidates[name]).sum()) if rows_now.size else 0
                scores[name] += there / total
            return {n: s * MAX_SCORE * weight for n, s in scores.items()}

        def hyper_node_order(job: JobInfo, candidates: Mapping[str, IntArray]) -> dict[str, float]:
            if job.spec.network_topology is None:
                return {}
            pending = list(job.by_status.get(TaskStatus.Pending, {}).values())
            return order_for(pending, list(job.tasks.values()), candidates)

        # a subgroup's HyperNodes are scored by binpack of all its tasks (allocate/subgroups.py)
        ssn.cache[SUBGROUP_ORDER] = order_for

        normal_enabled = self.arg_bool("normal-pod.enable", True) and len(tree) > 1
        fading = self.arg_float("normal-pod.fading", 0.8)
        tiers = sorted({t for h, t in tree.tier.items() if h != TOP_HYPERNODE})
        # per tier: each row's HyperNode of that tier as an index into names_at[t], -1 if none
        names_at: dict[int, list[str]] = {t: [] for t in tiers}
        owner_at: dict[int, IntArray] = {}
        for t in tiers:
            owner = np.full(len(nodes), -1, dtype=np.int64)
            for name in sorted(h for h, ht in tree.tier.items() if ht == t and h != TOP_HYPERNODE):
                owner[tree.rows[name]] = len(names_at[t])
                names_at[t].append(name)
            owner_at[t] = owner
        alloc_at: dict[int, FloatArray] = {}
        for t in tiers:
            owner = owner_at[t]
            inside = owner >= 0
            sums = [
                np.bincount(owner[inside], weights=nodes.alloc[inside][:, c], minlength=len(names_at[t]))
                for c in col_idx
            ]
            alloc_at[t] = np.stack(sums, axis=1).astype(np.float64).reshape(len(names_at[t]), col_idx.size)

        def normal_score(task: TaskInfo, rows: IntArray) -> FloatArray:
            """Volcano HEAD for pods without topology: binpack of the pod's HyperNode at each tier,
            faded by tier (lower tiers weigh more); a node outside any HyperNode of a tier scores 1."""
            req = task.req[col_idx]
            total = np.zeros(rows.size, dtype=np.float64)
            norm = 0.0
            for i, t in enumerate(tiers):
                owner = owner_at[t]
                count = len(names_at[t])
                inside = owner >= 0
                at = owner[inside]
                used_rows = nodes.used[inside]
                # allocatable never changes within a session; usage is summed per call (bincount)
                alloc = alloc_at[t]
                used = np.stack(
                    [np.bincount(at, weights=used_rows[:, c], minlength=count) for c in col_idx], axis=1
                )
                final = used + req
                parts = np.where(alloc > 0, final * col_w / np.maximum(alloc, 1), 0.0)
                bp = parts.sum(axis=1) / max(float(col_w.sum()), 1e-9)
                bp[((final > alloc) & (col_w > 0)).any(axis=1)] = 0.0
                mine = owner[rows]
                score = np.where(mine >= 0, bp[np.maximum(mine, 0)], 1.0)
                total += fading**i * score
                norm += fading**i
            out: FloatArray = total / norm * MAX_SCORE * weight
            return out

        def node_score(task: TaskInfo, rows: IntArray) -> FloatArray:
            out = np.zeros(rows.size, dtype=np.float64)
            job = task.job
            if job.spec.network_topology is None:
                return normal_score(task, rows) if normal_enabled else out
            allocated = tree.lca_of_rows(_job_rows(job))
            if allocated is None:
                return out
            if tree.max_tier == tree.min_tier:
                out[:] = 1.0
            else:
                lca = tree.lca_tiers(allocated, rows)
                out = (tree.max_tier - lca) / (tree.max_tier - tree.min_tier)
                out[tree.leaf_index[rows] == tree.index[allocated]] = 1.0
            tied = out == out.max()
            if tied.sum() > 1:
                counts = np.zeros(len(nodes), dtype=np.float64)
                for r in _job_rows(job):
                    counts[r] += 1
                out[tied] += counts[rows[tied]] / max(len(job.tasks), 1)
            result: FloatArray = out * MAX_SCORE * weight
            return result

        def one(task: TaskInfo, row: int) -> float:
            return float(node_score(task, np.array([row], dtype=np.int64))[0])

        def allocator(
            tasks: GoHeap[TaskInfo], job: JobInfo, queue: QueueInfo
        ) -> tuple[Statement | None, GoHeap[TaskInfo] | None] | None:
            if job.spec.network_topology is None:
                return None
            return _allocate_with_topology(ssn, tree, tasks, job, queue)

        ssn.add_hyper_node_order_fn(self.name, hyper_node_order)
        ssn.add_node_order_fn(self.name, one, node_score)
        ssn.add_job_allocator_fn(self.name, allocator)


def allowed_tier(tree: HyperNodeTree, job: JobInfo) -> int:
    topo = job.spec.network_topology
    assert topo is not None
    mode, tier = topo
    if mode == "soft":
        return tree.max_tier
    return tier


def _candidates(ssn: Session, tree: HyperNodeTree, job: JobInfo, limit: int) -> list[list[str]]:
    rows = _job_rows(job)
    if rows:
        # Part of the job already runs: search below the highest ancestor of where it runs that the
        # tier limit allows (Volcano's search root), every HyperNode there without the free-room
        # pre-filter; the LCA of old and new placements then stays within the limit.
        here = tree.lca_of_rows(rows)
        assert here is not None
        allowed = [a for a in tree.ancestors[here] if tree.tier[a] <= limit]
        if not allowed:
            return []
        return tree.by_tier(tree.subtree(allowed[-1]), highest_tier=limit)
    groups = []
    for group in tree.by_tier(highest_tier=limit):
        keep = [
            h
            for h in group
            if tree.rows[h].size
            and (job.min_resources <= ssn.nodes.future_idle[tree.rows[h]].sum(axis=0)).all()
        ]
        if keep:
            groups.append(keep)
    return groups


def _undo(ssn: Session, job: JobInfo, before: dict[str, tuple[TaskStatus, int | None]]) -> None:
    """Take back what a failed dry run left behind (allocate's pipelined leftovers)."""
    for task in sorted(job.tasks.values(), key=lambda t: t.uid, reverse=True):
        status, row = before[task.uid]
        if (task.status, task.row) == (status, row):
            continue
        if task.status == TaskStatus.Allocated:
            ssn.unallocate(task)
        elif task.status == TaskStatus.Pipelined:
            ssn.unpipeline(task)
        if status == TaskStatus.Pipelined and row is not None and task.status == TaskStatus.Pending:
            ssn.pipeline_on(task, row)


def _allocate_with_topology(
    ssn: Session, tree: HyperNodeTree, tasks: GoHeap[TaskInfo], job: JobInfo, queue: QueueInfo
) -> tuple[Statement | None, GoHeap[TaskInfo] | None]:
    limit = allowed_tier(tree, job)
    before = {t.uid: (t.status, t.row) for t in job.tasks.values()}
    roles = set(job.fit_error_roles)
    tried = 0
    for group in _candidates(ssn, tree, job, limit):
        scores = ssn.hyper_node_order(job, {h: tree.rows[h] for h in group})
        for name in sorted(group, key=lambda h: (-scores.get(h, 0.0), h)):
            tried += 1
            trial = tasks.clone()
            job.fit_error_roles = set(roles)
            stmt = allocate_for_tasks(ssn, trial, job, queue, candidates=tree.rows[name])
            if stmt is not None:
                return stmt, (None if trial.empty() else trial)
            _undo(ssn, job, before)
    job.fit_error_roles = roles
    mode = job.spec.network_topology[0] if job.spec.network_topology else "hard"
    first = min((t.uid for t in tasks), default=None)
    if first is not None and (mode == "hard" or tried == 0):
        job.nodes_fit_errors[first] = (
            f"network topology {mode}: no HyperNode of tier <= {limit} can hold the gang "
            f"({job.min_available} tasks; {tried} HyperNodes tried)"
        )
    return None, None
