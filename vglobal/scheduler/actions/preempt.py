"""preempt: starving jobs evict lower-priority tasks of other jobs in the same queue, then
tasks within a job; the preemptor is pipelined onto the freed node."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vglobal.scheduler.actions.victims import fits_with, predicates_pass, victims_queue
from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.registry import register_action
from vglobal.scheduler.selection import nodes_to_find, preempt_predicate_rows, score_nodes
from vglobal.scheduler.session import Session
from vglobal.scheduler.statement import Statement

PREEMPTABLE_STATUS = (TaskStatus.Running, TaskStatus.Bound)


def preempt(ssn: Session, stmt: Statement, preemptor: TaskInfo, accept: Callable[[TaskInfo], bool]) -> bool:
    job = preemptor.job
    if job.preemption_policy == "Never" or ssn.pre_predicate(preemptor) is not None:
        return False
    queue = ssn.queues[job.queue]
    rows = preempt_predicate_rows(ssn, preemptor)[: nodes_to_find(len(ssn.nodes))]
    if rows.size == 0:
        return False
    scores = score_nodes(ssn, preemptor, rows)
    order = np.lexsort((rows, -scores))  # score descending, then node name
    nodes = ssn.nodes
    for row in (int(rows[i]) for i in order):
        preemptees = [t for t in ssn.node_tasks[row].values() if accept(t)]
        preemptees.sort(key=lambda t: t.uid)
        victims = ssn.preemptable(preemptor, preemptees)
        if not victims:
            continue
        freeable = nodes.future_idle[row] + sum((v.req for v in victims), np.zeros_like(preemptor.req))
        if not fits_with(preemptor, freeable):
            continue
        heap = victims_queue(ssn, victims, preemptor)
        while not heap.empty():
            if (
                ssn.allocatable(queue, preemptor)
                and fits_with(preemptor, nodes.future_idle[row])
                and predicates_pass(ssn, preemptor, row)
            ):
                break
            stmt.evict(heap.pop())
        if ssn.allocatable(queue, preemptor) and fits_with(preemptor, nodes.future_idle[row]):
            stmt.pipeline(preemptor, row)
            return True
    return False


def _task_heap(ssn: Session, job: JobInfo) -> GoHeap[TaskInfo]:
    heap: GoHeap[TaskInfo] = GoHeap(ssn.task_order)
    for task in job.by_status.get(TaskStatus.Pending, {}).values():
        heap.push(task)
    return heap


def execute(ssn: Session) -> None:
    queues: GoHeap[QueueInfo] = GoHeap(ssn.queue_order)
    seen: set[str] = set()
    preemptors: dict[str, GoHeap[JobInfo]] = {}
    tasks: dict[str, GoHeap[TaskInfo]] = {}
    under_request: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending() or ssn.job_valid(job) is not None or job.spec.network_topology is not None:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.name not in seen:
            seen.add(queue.name)
            queues.push(queue)
        if ssn.job_starving(job):
            preemptors.setdefault(queue.name, GoHeap(ssn.job_order)).push(job)
            under_request.setdefault(queue.name, []).append(job)
            tasks[job.uid] = _task_heap(ssn, job)

    while not queues.empty():
        queue = queues.pop()
        # Phase 1: between jobs of the same queue.
        jobs = preemptors.get(queue.name)
        while jobs is not None and not jobs.empty():
            job = jobs.pop()
            stmt = Statement(ssn)
            assigned = False
            while ssn.job_starving(job) and not tasks[job.uid].empty():
                preemptor = tasks[job.uid].pop()

                def between_jobs(t: TaskInfo, p: TaskInfo = preemptor, j: JobInfo = job) -> bool:
                    if t.status not in PREEMPTABLE_STATUS or not t.preemptable:
                        return False
                    if p.best_effort and not t.best_effort:
                        return False
                    return t.job.queue == j.queue and t.job is not j

                if preempt(ssn, stmt, preemptor, between_jobs):
                    assigned = True
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
                continue
            if assigned:
                jobs.push(job)
        # Phase 2: between tasks of one job.
        for job in under_request.get(queue.name, []):
            heap = _task_heap(ssn, job)
            while not heap.empty():
                preemptor = heap.pop()
                stmt = Statement(ssn)

                def within_job(t: TaskInfo, p: TaskInfo = preemptor) -> bool:
                    if t.status != TaskStatus.Running:
                        return False
                    if p.best_effort and not t.best_effort:
                        return False
                    return t.job is p.job

                assigned = preempt(ssn, stmt, preemptor, within_job)
                stmt.commit()
                if not assigned:
                    break


register_action("preempt", execute)
