"""proportion: queues share the cluster by weight (water-filling), capped by capability and
lifted to their guarantee; a queue above its deserved share is overused and reclaimable."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vglobal.scheduler import quota
from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.framework import PERMIT, REJECT, EventHandler, Plugin
from vglobal.scheduler.info import ALLOCATED_STATUS, JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.quota import Vec
from vglobal.scheduler.session import Session


class QueueAttr:
    __slots__ = (
        "allocated",
        "capability",
        "deserved",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "real_capability",
        "request",
        "share",
        "weight",
    )

    def __init__(self, queue: QueueInfo, ssn: Session) -> None:
        index = ssn.index
        self.name = queue.name
        self.weight = max(queue.weight, 0)
        self.allocated = quota.zeros(index)
        self.request = quota.zeros(index)
        self.inqueue = quota.zeros(index)
        self.elastic = quota.zeros(index)
        self.deserved = quota.zeros(index)
        self.guarantee = quota.from_mapping(index, queue.spec.guarantee, 0)
        self.capability = quota.capability(index, queue.spec.capability)
        self.real_capability = quota.infinite(index)
        self.share = 0.0

    def update_share(self) -> None:
        self.share = quota.share(self.allocated, self.deserved)


def collect_usage(ssn: Session, attrs: dict[str, QueueAttr], job: JobInfo) -> None:
    """Allocated / requested / inqueue / elastic amounts of one job, added to its queue."""
    attr = attrs[job.queue]
    for status, tasks in job.by_status.items():
        for task in tasks.values():
            if status in ALLOCATED_STATUS:
                attr.allocated += task.req
                attr.request += task.req
            elif status == TaskStatus.Pending:
                attr.request += task.req
    min_res = job.min_resources
    if job.podgroup_phase == "Inqueue":
        attr.inqueue += min_res
    elif job.podgroup_phase == "Running":
        attr.inqueue += quota.pos(min_res - job.allocated)
    attr.elastic += quota.pos(job.allocated - min_res)


class ProportionPlugin(Plugin[Session]):
    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        index = ssn.index
        total = ssn.total.copy()
        attrs: dict[str, QueueAttr] = {}
        for job in ssn.jobs.values():
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            if queue.name not in attrs:
                attrs[queue.name] = QueueAttr(queue, ssn)
            collect_usage(ssn, attrs, job)
        self.attrs = attrs
        total_guarantee = sum((a.guarantee for a in attrs.values()), quota.zeros(index))
        for attr in attrs.values():
            attr.real_capability = np.minimum(
                attr.capability, quota.pos(total - total_guarantee) + attr.guarantee
            )
        water_fill(list(attrs.values()), total)
        for attr in attrs.values():
            attr.update_share()

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            if left.priority != right.priority:
                return -1 if left.priority > right.priority else 1
            ls, rs = attrs[left.name].share, attrs[right.name].share
            return 0 if ls == rs else (-1 if ls < rs else 1)

        ssn.add_queue_order_fn(self.name, queue_order)

        def reclaimable(reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims = []
            allocations: dict[str, Vec] = {}
            need = reclaimer.req
            for t in reclaimees:
                attr = attrs[t.job.queue]
                allocated = allocations.setdefault(t.job.queue, attr.allocated.copy())
                if np.any(allocated < need):
                    continue
                if not quota.le(allocated, attr.deserved):
                    allocated -= t.req
                    victims.append(t)
            return victims, PERMIT

        ssn.add_reclaimable_fn(self.name, reclaimable)

        def overused(queue: QueueInfo) -> bool:
            attr = attrs.get(queue.name)
            return attr is not None and quota.le(attr.deserved, attr.allocated)

        ssn.add_overused_fn(self.name, overused)

        def allocatable(queue: QueueInfo, task: TaskInfo) -> bool:
            if queue.state != "Open":
                return False
            attr = attrs.get(queue.name)
            if attr is None:
                return True
            return quota.le_on(attr.allocated + task.req, attr.deserved, task.req > 0)

        ssn.add_allocatable_fn(self.name, allocatable)
        ssn.add_preemptive_fn(self.name, allocatable)

        def enqueueable(job: JobInfo) -> int:
            queue = ssn.queues[job.queue]
            if queue.state != "Open":
                return REJECT
            attr = attrs.get(job.queue)
            min_req = job.min_resources
            if attr is None or not min_req.any():
                return PERMIT
            wanted = min_req + attr.allocated + attr.inqueue - attr.elastic
            return PERMIT if quota.le_on(wanted, attr.real_capability, min_req > 0) else REJECT

        ssn.add_job_enqueueable_fn(self.name, enqueueable)

        def enqueued(job: JobInfo) -> None:
            attr = attrs.get(job.queue)
            if attr is not None:
                attr.inqueue += job.min_resources

        ssn.add_job_enqueued_fn(self.name, enqueued)

        def on_allocate(task: TaskInfo) -> None:
            attr = attrs.get(task.job.queue)
            if attr is not None:
                attr.allocated += task.req
                attr.update_share()

        def on_deallocate(task: TaskInfo) -> None:
            attr = attrs.get(task.job.queue)
            if attr is not None:
                attr.allocated -= task.req
                attr.update_share()

        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate))


def water_fill(attrs: list[QueueAttr], total: Vec) -> None:
    """Volcano's deserved computation: share ``remaining`` by weight until every queue is met."""
    remaining = total.copy()
    met: set[str] = set()
    while True:
        weight = sum(a.weight for a in attrs if a.name not in met)
        if weight == 0:
            break
        old_remaining = remaining.copy()
        increased = np.zeros_like(total)
        decreased = np.zeros_like(total)
        for attr in attrs:
            if attr.name in met:
                continue
            old = attr.deserved.copy()
            des = attr.deserved + quota.part(remaining, attr.weight, weight)
            des = np.minimum(des, attr.real_capability)
            des = np.minimum(des, attr.request)
            des = np.maximum(des, attr.guarantee)
            attr.deserved = des
            if quota.le(attr.request, des) or quota.equal(des, old):
                met.add(attr.name)
            increased += quota.pos(des - old)
            decreased += quota.pos(old - des)
        remaining = quota.pos(remaining + decreased - increased)
        if quota.is_empty(remaining) or quota.equal(remaining, old_remaining):
            break
