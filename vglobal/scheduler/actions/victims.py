"""Shared by preempt and reclaim: victim order and the "does the preemptor fit now" check."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.session import Session


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
