"""The hub's queue capability on every pod beyond a gang, whatever the conf.

The hub admits a job on its gang (minAvailable pods) against its queue's capability; the pods
beyond it are placed here, and without this check a conf without proportion or capacity (the
agent's default) placed them all: 50 pods of 2 cpu in a queue of 50 cpu. For each queue of the
job's chain that the hub limits (``QueueSpec.federated`` with a capability), a task beyond its
job's gang is allocatable only while what the queue's tasks hold here (its descendants'
included) plus the task stays within the capability on every resource the capability names and
the task asks for. The capability the agent gets is what the queue holds here plus the room the
hub gave this cluster beyond gangs (its allowance: the hub splits the queue's room among its
clusters, so two clusters never both take it), so the check counts every pod of the queue.
Integer units, no tolerance: a pod that fits exactly fits, at any size.

A pod beyond the gang adds to what its job counts only what takes the job past its gang's
minResources: once the gang's pods have ended, the pods beyond it go into the gang's room, as the
hub charges the job at least its gang (and gives no allowance for what fits in it).

The gang itself is not checked again: the hub admitted it (and with proportion or capacity in the
conf those plugins check every task as Volcano does). So a job's gang counts whole in what its queue
holds here from the start, placed or not: the hub admitted it into that room, and pods beyond
another job's gang (placed first, by job order) would otherwise take it, and the gang then go past
the capability (two jobs admitted in one cycle, 4 cpu in a 3-cpu queue).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from vglobal.scheduler.framework import EventHandler
from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.nodes import IntArray


class QueueRoom:
    def __init__(
        self, queues: dict[str, QueueInfo], jobs: dict[str, JobInfo], names: tuple[str, ...]
    ) -> None:
        self.cap: dict[str, IntArray] = {}
        self.named: dict[str, npt.NDArray[np.bool_]] = {}
        for q in queues.values():
            cap = q.spec.capability
            if q.spec.federated and cap is not None:
                self.cap[q.name] = np.array([cap.get(n, 0) for n in names], dtype=np.int64)
                self.named[q.name] = np.array([n in cap for n in names])
        self.chains: dict[str, tuple[str, ...]] = {}
        for name in queues:
            chain: list[str] = []
            at = queues.get(name)
            while at is not None and len(chain) <= len(queues):
                if at.name in self.cap:
                    chain.append(at.name)
                at = queues.get(at.parent) if at.parent and at.parent != at.name else None
            if chain:
                self.chains[name] = tuple(chain)
        self.held = {name: np.zeros(len(names), dtype=np.int64) for name in self.cap}
        # Per job of a limited queue: what it holds here and its gang's minResources; it counts
        # the larger of the two on each resource.
        self._jobs: dict[str, tuple[IntArray, IntArray]] = {}
        for job in jobs.values():
            limited = self.chains.get(job.queue, ())
            if not limited:
                continue
            alloc, gang = job.allocated.copy(), job.min_resources
            self._jobs[job.uid] = (alloc, gang)
            for name in limited:
                self.held[name] += np.maximum(alloc, gang)

    def __bool__(self) -> bool:
        return bool(self.chains)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        job = task.job
        if job.ready_task_num() < job.min_available:
            return True
        # What the task adds to what the job counts: nothing while it stays within the gang's
        # room (its pods ended, the gang's minResources still count whole, as the hub charges).
        alloc, gang = self._jobs.get(job.uid, (job.allocated, job.min_resources))
        add = np.maximum(alloc + task.req, gang) - np.maximum(alloc, gang)
        asks = task.req > 0
        for name in self.chains.get(job.queue, ()):
            dims = self.named[name] & asks
            if np.any((self.held[name] + add)[dims] > self.cap[name][dims]):
                job.limit_note = f"queue {name}: no room under its capability for {task.name} beyond the gang"
                return False
        return True

    def _allocated(self, task: TaskInfo) -> None:
        self._move(task, task.req)

    def _deallocated(self, task: TaskInfo) -> None:
        self._move(task, -task.req)

    def _move(self, task: TaskInfo, req: IntArray) -> None:
        got = self._jobs.get(task.job.uid)
        if got is None:
            return
        alloc, gang = got
        before = np.maximum(alloc, gang)
        alloc += req
        delta = np.maximum(alloc, gang) - before
        for name in self.chains.get(task.job.queue, ()):
            self.held[name] += delta

    def handler(self) -> EventHandler:
        return EventHandler(self._allocated, self._deallocated)
