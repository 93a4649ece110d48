"""preempt: starving jobs evict lower-priority tasks of other jobs in the same queue, then
tasks within a job; the preemptor is pipelined onto the freed node."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vglobal.scheduler.actions.victims import (
    fits_with,
    nominated_pending,
    pending_tasks,
    predicates_pass,
    starving_jobs,
    victims_queue,
)
from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.info import JobInfo, TaskInfo
from vglobal.scheduler.selection import nodes_to_find, preempt_predicate_rows, score_nodes
from vglobal.scheduler.session import Session
from vglobal.scheduler.statement import Statement

PREEMPTABLE_STATUS = (TaskStatus.Running, TaskStatus.Bound)


def preempt(ssn: Session, stmt: Statement, preemptor: TaskInfo, accept: Callable[[TaskInfo], bool]) -> bool:
    job = preemptor.job
    if job.preemption_policy == "Never" or ssn.pre_predicate(preemptor) is not None:
        return False
    if nominated_pending(ssn, preemptor):
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


def execute(ssn: Session) -> None:
    # Volcano skips jobs with a network topology as preemptors.
    starving = starving_jobs(ssn, skip=lambda job: job.spec.network_topology is not None)
    queues, preemptors, tasks = starving.queues, starving.jobs, starving.tasks
    under_request = starving.found

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
            heap = pending_tasks(ssn, job)
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
