"""allocate for a job with subgroups (partitions): two gang levels and two topology levels.

As Volcano's ``allocateForJob`` / ``allocateForSubJob``: for each candidate HyperNode of the job (its
gradients: tiers ascending up to the job's highest allowed tier; the whole cluster without a hard
topology), subgroups are placed one by one, each inside a HyperNode of its own gradients *within*
the job's HyperNode, each whole or not at all, until the job is ready (its minAvailable and every
policy's minSubGroups). Each try is a dry run; the job HyperNode whose subgroups score best wins and
its placements are replayed, the others leave nothing behind. Soft topology is hard with the
synthetic top HyperNode allowed, so it reuses the same path without filtering.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import ON_NODE, JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.nodes import IntArray
from vglobal.scheduler.selection import fits_future, fits_idle, pick_row, predicate_nodes
from vglobal.scheduler.session import Session
from vglobal.scheduler.statement import Statement
from vglobal.scheduler.subjobs import SubJobInfo
from vglobal.scheduler.topology import SUBGROUP_ORDER, TOP_HYPERNODE, TREE_CACHE, HyperNodeTree

Saved = tuple[tuple[str, TaskInfo, int | None], ...]


def sub_job_order(left: SubJobInfo, right: SubJobInfo) -> bool:
    """gang (not-ready first), then priority (higher first), then MatchIndex and uid."""
    lr, rr = left.is_ready(), right.is_ready()
    if lr != rr:
        return rr
    if left.priority != right.priority:
        return left.priority > right.priority
    if left.match_index != right.match_index:
        return left.match_index < right.match_index
    return left.uid < right.uid


@dataclass(slots=True)
class Worksheet:
    """The subgroups still to place (required ones first) and each one's pending tasks."""

    sub_jobs: GoHeap[SubJobInfo]
    tasks: dict[str, GoHeap[TaskInfo]]

    def empty(self) -> bool:
        return self.sub_jobs.empty()

    def clone(self) -> Worksheet:
        return Worksheet(self.sub_jobs.clone(), {k: v.clone() for k, v in self.tasks.items()})


def organize(ssn: Session, job: JobInfo) -> Worksheet:
    """``organizeJobWorksheet``: the smallest set of not-ready subgroups that reaches every policy's
    minSubGroups is "required" and goes first."""
    subs = job.sub_jobs
    counted: dict[str, int] = {}
    waiting: list[SubJobInfo] = []
    for sub in subs.by_uid.values():
        if sub.is_ready():
            counted[sub.gid] = counted.get(sub.gid, 0) + 1
        else:
            waiting.append(sub)
    ordered: GoHeap[SubJobInfo] = GoHeap(sub_job_order)
    for sub in waiting:
        ordered.push(sub)
    required: set[str] = set()
    while not ordered.empty():
        sub = ordered.pop()
        if counted.get(sub.gid, 0) < subs.min_groups.get(sub.gid, 0):
            required.add(sub.uid)
            counted[sub.gid] = counted.get(sub.gid, 0) + 1

    def less(left: SubJobInfo, right: SubJobInfo) -> bool:
        lq, rq = left.uid in required, right.uid in required
        if lq != rq:
            return lq
        return sub_job_order(left, right)

    sheet = Worksheet(GoHeap(less), {})
    for uid, sub in subs.by_uid.items():
        heap: GoHeap[TaskInfo] = GoHeap(ssn.task_order)
        for task in job.by_status.get(TaskStatus.Pending, {}).values():
            if task.uid in sub.tasks and not task.best_effort:
                heap.push(task)
        if not heap.empty():
            sheet.sub_jobs.push(sub)
            sheet.tasks[uid] = heap
    return sheet


def _limit(tree: HyperNodeTree, topology: tuple[str, int] | None) -> int | None:
    """The highest tier a job or subgroup may use; None when it has no constraint (or the session
    has no HyperNode tree: the tree of the whole cluster only has its top)."""
    if topology is None or len(tree) <= 1:
        return None
    mode, tier = topology
    return tree.max_tier if mode == "soft" else tier


def gradients(
    ssn: Session, tree: HyperNodeTree, root: str, limit: int | None, allocated: str, need: IntArray
) -> list[list[str]]:
    """``hyperNodeGradientFn``: HyperNodes under ``root`` of tier <= ``limit`` by tier ascending,
    pre-filtered by idle or future-idle room for ``need``; once part is placed, only HyperNodes
    under the highest allowed ancestor of what is placed."""
    if limit is None:
        return [[root]]
    search = root
    if allocated:
        allowed = [a for a in tree.ancestors[allocated] if tree.tier[a] <= limit]
        if not allowed:
            return []
        highest = allowed[-1]
        lca = tree.lca(root, highest)
        if lca == root:
            search = highest
        elif lca != highest:
            return []
    out = []
    for name in tree.subtree(search):
        rows = tree.rows[name]
        if tree.tier[name] > limit or not rows.size:
            continue
        room = (ssn.nodes.idle[rows].sum(axis=0), ssn.nodes.future_idle[rows].sum(axis=0))
        if allocated or any((need <= free).all() for free in room):
            out.append(name)
    return tree.by_tier(out)


def _placed_hyper_node(tree: HyperNodeTree, tasks: list[TaskInfo]) -> str:
    return tree.lca_of_rows([t.row for t in tasks if t.row is not None and t.status in ON_NODE]) or ""


def _place_tasks(
    ssn: Session, job: JobInfo, queue: QueueInfo, sub: SubJobInfo, tasks: GoHeap[TaskInfo], rows: IntArray
) -> Statement | None:
    """``allocateResourcesForTasks``: the subgroup's tasks on ``rows``, kept only if it gets ready
    (or pipelined)."""
    stmt = Statement(ssn)
    while not tasks.empty():
        task = tasks.pop()
        if not ssn.allocatable(queue, task):
            job.quota_note = f"queue {queue.name} cannot take task {task.name} (quota or state)"
            continue
        reason = ssn.pre_predicate(task)
        if reason is not None:
            job.nodes_fit_errors[task.uid] = reason
            break
        found = predicate_nodes(ssn, task, candidates=rows)
        if found.rows.size == 0:
            # a subgroup is whole or nothing: one pod that fits nowhere ends the try
            job.nodes_fit_errors[task.uid] = found.fit_error
            break
        row = pick_row(ssn, task, found.rows)
        if row is None:
            continue
        if fits_idle(ssn, task, row):
            stmt.allocate(task, row)
        elif fits_future(ssn, task, row):
            stmt.pipeline(task, row)
        if sub.is_ready():
            break
    if sub.is_ready() or sub.is_pipelined():
        return stmt
    stmt.discard()
    return None


def _need(sub: SubJobInfo, job: JobInfo) -> IntArray:
    """``SubJobInfo.GetMinResources``: what its pending tasks ask for."""
    need = np.zeros_like(job.allocated)
    for t in sub.pending():
        need += job.tasks[t.uid].req
    return need


def _order(ssn: Session, job: JobInfo, sub: SubJobInfo, candidates: dict[str, IntArray]) -> dict[str, float]:
    """The subgroup's HyperNode scores (network-topology-aware's binpack of its tasks), if enabled."""
    order = ssn.cache.get(SUBGROUP_ORDER)
    if order is None:
        return {}
    mine = [job.tasks[uid] for uid in sub.tasks]
    scores: dict[str, float] = order(mine, mine, candidates)
    return scores


def allocate_for_sub_job(
    ssn: Session,
    tree: HyperNodeTree,
    job: JobInfo,
    queue: QueueInfo,
    sub: SubJobInfo,
    sheet: Worksheet,
    job_hyper_node: str,
) -> tuple[Statement | None, float]:
    tasks = sheet.tasks[sub.uid]
    limit = _limit(tree, sub.network_topology)
    for group in gradients(ssn, tree, job_hyper_node, limit, sub.allocated_hyper_node, _need(sub, job)):
        found: dict[str, tuple[Saved, GoHeap[TaskInfo]]] = {}
        for name in group:
            trial = tasks.clone()
            stmt = _place_tasks(ssn, job, queue, sub, trial, tree.rows[name])
            if stmt is not None and stmt.operations:
                found[name] = (stmt.save_operations(), trial)
                stmt.discard()
        if not found:
            continue
        scores = _order(ssn, job, sub, {h: tree.rows[h] for h in found})
        best = min(found, key=lambda h: (-scores.get(h, 0.0), h))
        final = Statement(ssn)
        final.recover_operations(found[best][0])
        was = sub.allocated_hyper_node
        sub.allocated_hyper_node = tree.lca(was, best) if was else best
        sheet.tasks[sub.uid] = found[best][1]
        return final, scores.get(best, 0.0)
    return None, 0.0


def allocate_for_job(
    ssn: Session, tree: HyperNodeTree, job: JobInfo, queue: QueueInfo, sheet: Worksheet
) -> Statement | None:
    """The best job HyperNode's placements as one statement (not committed), or None."""
    if sheet.empty():
        return None
    for sub in job.sub_jobs.by_uid.values():
        if not sub.allocated_hyper_node:
            mine = [job.tasks[uid] for uid in sub.tasks]
            sub.allocated_hyper_node = _placed_hyper_node(tree, mine)
    limit = _limit(tree, job.spec.network_topology)
    allocated = _placed_hyper_node(tree, list(job.tasks.values()))
    before = {uid: sub.allocated_hyper_node for uid, sub in job.sub_jobs.by_uid.items()}
    tried = 0
    for group in gradients(ssn, tree, TOP_HYPERNODE, limit, allocated, job.min_resources):
        solutions: dict[str, tuple[Saved, Worksheet, float, dict[str, str]]] = {}
        for name in group:
            tried += 1
            copy = sheet.clone()
            stmts: list[Statement] = []
            score = 0.0
            while not copy.empty():
                sub = copy.sub_jobs.pop()
                stmt, got = allocate_for_sub_job(ssn, tree, job, queue, sub, copy, name)
                if stmt is not None and stmt.operations:
                    stmts.append(stmt)
                    score += got
                    if not copy.tasks[sub.uid].empty():
                        copy.sub_jobs.push(sub)
                    if ssn.job_ready(job):
                        break
            saved: Saved = tuple(op for s in stmts for op in s.save_operations())
            if saved and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                decided = {uid: sub.allocated_hyper_node for uid, sub in job.sub_jobs.by_uid.items()}
                solutions[name] = (saved, copy, score, decided)
            for stmt in reversed(stmts):
                stmt.discard()
            for uid, sub in job.sub_jobs.by_uid.items():
                sub.allocated_hyper_node = before[uid]
        if not solutions:
            continue
        best = min(solutions, key=lambda h: (-solutions[h][2], h))
        saved, copy, _, decided = solutions[best]
        final = Statement(ssn)
        final.recover_operations(saved)
        sheet.sub_jobs, sheet.tasks = copy.sub_jobs, copy.tasks
        for uid, sub in job.sub_jobs.by_uid.items():
            sub.allocated_hyper_node = decided[uid]
        return final
    first = min((t.uid for t in job.by_status.get(TaskStatus.Pending, {}).values()), default=None)
    if first is not None and limit is not None and not job.nodes_fit_errors.get(first):
        job.nodes_fit_errors[first] = (
            f"network topology: no HyperNode of tier <= {limit} can hold the job's subgroups "
            f"({tried} HyperNodes tried)"
        )
    return None


def session_tree(ssn: Session) -> HyperNodeTree:
    """The HyperNode tree network-topology-aware built; without that plugin, as in Volcano without a
    gradient plugin, a tree whose only HyperNode is the whole cluster."""
    tree = ssn.cache.get(TREE_CACHE)
    if not isinstance(tree, HyperNodeTree):
        tree = ssn.cache[TREE_CACHE + "/none"] = HyperNodeTree((), ssn.nodes.row)
    return tree
