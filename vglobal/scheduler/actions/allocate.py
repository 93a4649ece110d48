"""allocate: queue by queue, job by job, place pending tasks; a gang commits only when ready."""

from __future__ import annotations

import numpy as np

from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo, need_continue_allocating
from vglobal.scheduler.nodes import IntArray
from vglobal.scheduler.selection import best_row, predicate_nodes
from vglobal.scheduler.session import Session
from vglobal.scheduler.statement import Statement


def pick_row(ssn: Session, task: TaskInfo, rows: IntArray) -> int | None:
    """Nodes where the task fits Idle first; only if none, nodes where it fits FutureIdle."""
    cols = task.cols
    idle_ok = (ssn.nodes.idle[np.ix_(rows, cols)] >= task.req[cols]).all(axis=1)
    for group in (rows[idle_ok], rows[~idle_ok]):
        if group.size:
            return best_row(ssn, task, group)[0]
    return None


def fits_idle(ssn: Session, task: TaskInfo, row: int) -> bool:
    return bool((ssn.nodes.idle[row, task.cols] >= task.req[task.cols]).all())


def fits_future(ssn: Session, task: TaskInfo, row: int) -> bool:
    return bool((ssn.nodes.future_idle[row, task.cols] >= task.req[task.cols]).all())


def allocate_for_tasks(
    ssn: Session,
    tasks: GoHeap[TaskInfo],
    job: JobInfo,
    queue: QueueInfo,
    candidates: IntArray | None = None,
) -> Statement | None:
    """Place tasks until the job is ready; the statement if ready (or kept pipelined), else None.

    ``candidates`` limits the nodes (one HyperNode's rows, for topology-aware allocation).
    """
    stmt = Statement(ssn)
    while not tasks.empty():
        task = tasks.pop()
        restore: int | None = None
        if task.status == TaskStatus.Pipelined and task.row is not None:
            # Retry a task pipelined in an earlier cycle; put it back if nothing better turns up.
            restore = task.row
            ssn.unpipeline(task)
        if not ssn.allocatable(queue, task):
            job.quota_note = f"queue {queue.name} cannot take task {task.name} (quota or state)"
            continue
        if task.role in job.fit_error_roles:
            _restore(stmt, task, restore)
            continue
        reason = ssn.pre_predicate(task)
        if reason is not None:
            job.nodes_fit_errors[task.uid] = reason
            _restore(stmt, task, restore)
            break
        found = predicate_nodes(ssn, task, candidates=candidates)
        if found.rows.size == 0:
            job.nodes_fit_errors[task.uid] = found.fit_error
            job.fit_error_roles.add(task.role)
            _restore(stmt, task, restore)
            if need_continue_allocating(job):
                continue
            break
        row = pick_row(ssn, task, found.rows)
        if row is None:
            _restore(stmt, task, restore)
            continue
        if fits_idle(ssn, task, row):
            stmt.allocate(task, row)
        elif fits_future(ssn, task, row):
            stmt.pipeline(task, row)
        if ssn.job_ready(job) and not tasks.empty():
            break
    if ssn.job_ready(job):
        return stmt
    if not ssn.job_pipelined(job):
        stmt.discard()
    return None


def _restore(stmt: Statement, task: TaskInfo, row: int | None) -> None:
    if row is not None and task.status == TaskStatus.Pending:
        stmt.pipeline(task, row)


def execute(ssn: Session) -> None:
    queues: GoHeap[QueueInfo] = GoHeap(ssn.queue_order)
    jobs_map: dict[str, GoHeap[JobInfo]] = {}
    enqueue_configured = "enqueue" in ssn.conf.actions
    for job in ssn.jobs.values():
        if job.is_pending():
            if enqueue_configured:
                continue
            job.podgroup_phase = "Inqueue"
        invalid = ssn.job_valid(job)
        if invalid is not None:
            ssn.reasons.setdefault(job.uid, invalid)
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            ssn.reasons[job.uid] = f"queue {job.queue} not found"
            continue
        if job.queue not in jobs_map:
            jobs_map[job.queue] = GoHeap(ssn.job_order)
            queues.push(queue)
        jobs_map[job.queue].push(job)

    pending: dict[str, GoHeap[TaskInfo]] = {}
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = jobs_map.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        tasks = pending.get(job.uid)
        if tasks is None:
            tasks = GoHeap(ssn.task_order)
            for status in (TaskStatus.Pipelined, TaskStatus.Pending):
                for task in job.by_status.get(status, {}).values():
                    if not task.best_effort:
                        tasks.push(task)
            pending[job.uid] = tasks
        if tasks.empty():
            queues.push(queue)
            continue
        handled = None
        for allocator in ssn.job_allocators():
            handled = allocator(tasks, job, queue)
            if handled is not None:
                break
        if handled is not None:
            stmt, left = handled
            if left is not None:
                pending[job.uid] = left
                jobs.push(job)
        else:
            stmt = allocate_for_tasks(ssn, tasks, job, queue)
            if not tasks.empty():
                jobs.push(job)
        if stmt is not None:
            stmt.commit()
        queues.push(queue)
