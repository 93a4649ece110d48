"""reclaim: starving jobs take back resources from other queues' reclaimable running tasks."""

from __future__ import annotations

import numpy as np

from vglobal.scheduler.actions.victims import fits_with, starving_jobs, victims_queue
from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.selection import nodes_to_find, preempt_predicate_rows
from vglobal.scheduler.session import Session
from vglobal.scheduler.statement import Statement


def execute(ssn: Session) -> None:
    starving = starving_jobs(ssn)
    queues, preemptors, tasks = starving.queues, starving.jobs, starving.tasks

    nodes = ssn.nodes
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = preemptors.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        pending = tasks[job.uid]
        if pending.empty() or not ssn.job_starving(job):
            continue
        task = pending.pop()
        if job.preemption_policy == "Never" or not ssn.preemptive(queue, task):
            continue
        stmt = Statement(ssn)
        assigned = False
        if ssn.pre_predicate(task) is None:
            for row in (int(r) for r in preempt_predicate_rows(ssn, task)[: nodes_to_find(len(nodes))]):
                reclaimees = sorted(
                    (
                        t
                        for t in ssn.node_tasks[row].values()
                        if t.status == TaskStatus.Running
                        and t.preemptable
                        and t.job.queue != job.queue
                        and ssn.queues[t.job.queue].reclaimable
                    ),
                    key=lambda t: t.uid,
                )
                if not reclaimees:
                    continue
                victims = ssn.reclaimable(task, reclaimees)
                if not victims:
                    continue
                freeable = nodes.future_idle[row] + sum((v.req for v in victims), np.zeros_like(task.req))
                if not fits_with(task, freeable):
                    continue
                heap = victims_queue(ssn, victims, task)
                # Room first: a node whose idle (with what is being released) holds the task
                # already loses nothing (Volcano checks before each eviction).
                while not heap.empty() and not fits_with(task, nodes.future_idle[row]):
                    stmt.evict(heap.pop())
                if fits_with(task, nodes.future_idle[row]):
                    stmt.pipeline(task, row)
                    assigned = True
                    break
        if ssn.job_pipelined(job):
            stmt.commit()
        else:
            stmt.discard()
        if assigned:
            jobs.push(job)
        queues.push(queue)
