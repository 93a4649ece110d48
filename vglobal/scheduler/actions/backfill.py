"""backfill: place BestEffort (request-less) pending tasks of jobs that are past Pending."""

from __future__ import annotations

from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.selection import best_row, predicate_nodes
from vglobal.scheduler.session import Session


def execute(ssn: Session) -> None:
    for job in ssn.jobs.values():
        if job.is_pending() or ssn.job_valid(job) is not None:
            continue
        tasks: GoHeap[TaskInfo] = GoHeap(ssn.task_order)
        for task in job.by_status.get(TaskStatus.Pending, {}).values():
            if task.best_effort:
                tasks.push(task)
        while not tasks.empty():
            task = tasks.pop()
            reason = ssn.pre_predicate(task)
            if reason is not None:
                job.nodes_fit_errors[task.uid] = reason
                continue
            found = predicate_nodes(ssn, task)
            if found.rows.size == 0:
                job.nodes_fit_errors[task.uid] = found.fit_error
                continue
            row = best_row(ssn, task, found.rows)[0]
            ssn.allocate(task, row)
