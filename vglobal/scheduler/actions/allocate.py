"""allocate: queue by queue, job by job, place pending tasks; a gang commits only when ready."""

from __future__ import annotations

from vglobal.scheduler.actions.subgroups import Worksheet, allocate_for_job, organize, session_tree
from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo, need_continue_allocating
from vglobal.scheduler.nodes import IntArray
from vglobal.scheduler.selection import fits_future, fits_idle, nominated_fit, pick_row, predicate_nodes
from vglobal.scheduler.session import Session
from vglobal.scheduler.statement import Statement


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
        found = nominated_fit(ssn, task, candidates) or predicate_nodes(ssn, task, candidates=candidates)
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
    sheets: dict[str, Worksheet] = {}
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = jobs_map.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        if job.sub_jobs:
            sheet = sheets.get(job.uid)
            if sheet is None:
                sheet = sheets[job.uid] = organize(ssn, job)
            found = allocate_for_job(ssn, session_tree(ssn), job, queue, sheet)
            if found is not None and ssn.job_ready(job):  # a pipelined job is not committed
                found.commit()
                if not sheet.empty():
                    jobs.push(job)
            queues.push(queue)
            continue
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
