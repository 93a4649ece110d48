"""Shared by preempt and reclaim: the starving jobs they serve, victim order and the "does the
preemptor fit now" check."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.selection import nominated_rows
from vglobal.scheduler.session import Session


@dataclass
class Starving:
    """Where preempt and reclaim start: every queue with a job past enqueue, and per queue its
    starving jobs, each with its pending tasks."""

    queues: GoHeap[QueueInfo]
    jobs: dict[str, GoHeap[JobInfo]] = field(default_factory=dict)  # per queue, in job order
    found: dict[str, list[JobInfo]] = field(default_factory=dict)  # per queue, in session order
    tasks: dict[str, GoHeap[TaskInfo]] = field(default_factory=dict)  # per job, in task order


def pending_tasks(ssn: Session, job: JobInfo) -> GoHeap[TaskInfo]:
    heap: GoHeap[TaskInfo] = GoHeap(ssn.task_order)
    for task in job.by_status.get(TaskStatus.Pending, {}).values():
        heap.push(task)
    return heap


def starving_jobs(ssn: Session, skip: Callable[[JobInfo], bool] = lambda job: False) -> Starving:
    """Jobs still pending (not past enqueue), invalid ones and those ``skip`` names are left out."""
    out = Starving(GoHeap(ssn.queue_order))
    seen: set[str] = set()
    for job in ssn.jobs.values():
        if job.is_pending() or ssn.job_valid(job) is not None or skip(job):
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.name not in seen:
            seen.add(queue.name)
            out.queues.push(queue)
        if ssn.job_starving(job):
            out.jobs.setdefault(queue.name, GoHeap(ssn.job_order)).push(job)
            out.found.setdefault(queue.name, []).append(job)
            out.tasks[job.uid] = pending_tasks(ssn, job)
    return out


def victims_queue(ssn: Session, victims: Sequence[TaskInfo], preemptor: TaskInfo) -> GoHeap[TaskInfo]:
    """``BuildVictimsPriorityQueue``: the least important victim comes out first."""
    preemptor_queue = ssn.queues[preemptor.job.queue]

    def less(left: TaskInfo, right: TaskInfo) -> bool:
        if left.job is right.job:
            return not ssn.task_order(left, right)
        if left.job.queue != right.job.queue:
            lq, rq = ssn.queues[left.job.queue], ssn.queues[right.job.queue]
            order = ssn.victim_queue_order(lq, rq, preemptor_queue)
            if order != 0:
                return order < 0
            return not ssn.queue_order(lq, rq)
        return not ssn.job_order(left.job, right.job)

    heap: GoHeap[TaskInfo] = GoHeap(less)
    for victim in victims:
        heap.push(victim)
    return heap


def fits_with(task: TaskInfo, available: np.ndarray) -> bool:
    return bool((available[task.cols] >= task.req[task.cols]).all())


def predicates_pass(ssn: Session, task: TaskInfo, row: int) -> bool:
    return all(bool(f.passed[row]) for f in ssn.predicate_filters(task))


def nominated_pending(ssn: Session, preemptor: TaskInfo) -> bool:
    """Volcano's taskEligibleToPreempt for a task with nominated nodes (the hub freed them for its
    job): it preempts nothing while one of them fits it, or while a lower-priority pod on one of
    them is still on its way out; it will go there."""
    rows = nominated_rows(ssn, preemptor)
    if rows is None:
        return False
    for row in rows.tolist():
        if fits_with(preemptor, ssn.nodes.future_idle[row]) and predicates_pass(ssn, preemptor, row):
            return True
        leaving = (t for t in ssn.node_tasks[row].values() if t.status == TaskStatus.Releasing)
        if any(t.priority < preemptor.priority for t in leaving):
            return True
    return False
