"""enqueue: move Pending PodGroups to Inqueue when the plugins let them in."""

from __future__ import annotations

from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import JobInfo, QueueInfo
from vglobal.scheduler.session import Session


def execute(ssn: Session) -> None:
    queues: GoHeap[QueueInfo] = GoHeap(ssn.queue_order)
    seen: set[str] = set()
    jobs_map: dict[str, GoHeap[JobInfo]] = {}
    for job in ssn.jobs.values():
        queue = ssn.queues.get(job.queue)
        if queue is None:
            ssn.reasons[job.uid] = f"queue {job.queue} not found"
            continue
        if queue.name not in seen:
            seen.add(queue.name)
            queues.push(queue)
        if job.is_pending():
            jobs_map.setdefault(queue.name, GoHeap(ssn.job_order)).push(job)

    while not queues.empty():
        queue = queues.pop()
        jobs = jobs_map.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        if not job.min_resources.any() or ssn.job_enqueueable(job):
            ssn.job_enqueued(job)
            job.podgroup_phase = "Inqueue"
        else:
            ssn.reasons[job.uid] = f"queue {queue.name} has not enough resources to enqueue the job"
        queues.push(queue)
