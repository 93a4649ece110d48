"""Mutable per-session views of tasks, jobs and queues (Volcano's TaskInfo / JobInfo / QueueInfo).

A job keeps its tasks indexed by status, and per-role counters, so gang checks are O(roles) per
allocation instead of a scan of all tasks.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import JobSpec, QueueSpec, TaskSpec, TaskStatus
from vglobal.scheduler.nodes import DEFAULT_MEMORY, DEFAULT_MILLI_CPU, IntArray, ResourceIndex
from vglobal.scheduler.subjobs import SubJobs, group_tasks

ALLOCATED_STATUS = frozenset({TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running})
# Statuses whose task occupies resources on its node.
ON_NODE = ALLOCATED_STATUS | {TaskStatus.Releasing}
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
# Go's strconv.ParseBool spellings; Volcano reads any other value as "not preemptable".
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def preemptable_flag(value: str) -> bool:
    """``volcano.sh/preemptable`` as Volcano reads it (a value Go cannot parse means false)."""
    return value in _GO_TRUE


_READY = frozenset((*ALLOCATED_STATUS, TaskStatus.Succeeded))


def _name_suffix(name: str, index: int) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else index


class TaskInfo:
    __slots__ = (
        "best_effort",
        "cols",
        "creation",
        "host_ports",
        "job",
        "name",
        "namespace",
        "node",
        "nonzero",
        "preemptable",
        "priority",
        "req",
        "request",
        "role",
        "row",
        "spec",
        "status",
        "suffix",
        "uid",
    )

    def __init__(self, spec: TaskSpec, job: JobInfo, index: ResourceIndex) -> None:
        self.spec = spec
        self.uid = spec.uid
        self.name = spec.name
        self.namespace = spec.namespace
        self.job = job
        self.role = spec.role
        # Every pod asks for one pod slot on its node.
        self.request: ResourceVector = spec.request + {"pods": 1}
        self.req: IntArray = index.vector(self.request)
        self.cols: IntArray = np.flatnonzero(self.req > 0)  # the dimensions fit checks look at
        # BestEffort: no request other than the pod slot.
        self.best_effort = all(v <= 0 for k, v in spec.request.items() if k != "pods")
        cpu, mem = spec.request["cpu"], spec.request["memory"]
        self.nonzero = (cpu or DEFAULT_MILLI_CPU, mem or DEFAULT_MEMORY)
        raw_priority = spec.annotations.get(TASK_PRIORITY_ANNOTATION)
        self.priority = (
            int(raw_priority) if raw_priority and raw_priority.lstrip("-").isdigit() else spec.priority
        )
        flag = spec.annotations.get(PREEMPTABLE_ANNOTATION)
        self.preemptable = spec.preemptable if flag is None else preemptable_flag(flag)
        self.status = spec.status
        self.node: str | None = spec.node
        self.row: int | None = None
        self.host_ports = spec.host_ports
        self.creation = spec.creation
        self.suffix = _name_suffix(spec.name, spec.index)

    def __repr__(self) -> str:
        return f"Task({self.name}, {self.status}, {self.node})"


class JobInfo:
    __slots__ = (
        "allocated",
        "best_effort_pending",
        "by_status",
        "creation",
        "fit_error_roles",
        "job_fit_error",
        "limit_note",
        "min_available",
        "min_resources",
        "name",
        "namespace",
        "nodes_fit_errors",
        "podgroup_phase",
        "preemption_policy",
        "priority",
        "queue",
        "quota_note",
        "ready",
        "role_counts",
        "spec",
        "sub_jobs",
        "task_min_available",
        "tasks",
        "total_request",
        "uid",
        "unschedulable",
    )

    def __init__(self, spec: JobSpec, index: ResourceIndex) -> None:
        self.spec = spec
        self.uid = spec.uid
        self.name = spec.name
        self.namespace = spec.namespace
        self.queue = spec.queue
        self.priority = spec.priority
        self.min_available = spec.min_available
        self.task_min_available = dict(spec.task_min_available)
        self.creation = spec.creation
        self.podgroup_phase = spec.podgroup_phase
        self.preemption_policy = spec.preemption_policy
        self.allocated: IntArray = np.zeros(len(index), dtype=np.int64)
        self.total_request: IntArray = np.zeros(len(index), dtype=np.int64)
        self.tasks: dict[str, TaskInfo] = {}
        self.best_effort_pending = 0
        self.ready = 0  # tasks in a _READY status, kept as they move: the job order asks per comparison
        self.by_status: dict[TaskStatus, dict[str, TaskInfo]] = defaultdict(dict)
        self.role_counts: dict[str, dict[TaskStatus, int]] = defaultdict(lambda: defaultdict(int))
        self.nodes_fit_errors: dict[str, str] = {}  # task uid -> fit error summary
        self.fit_error_roles: set[str] = set()
        self.job_fit_error = ""
        self.quota_note = ""  # why the queue refused a task this session (reason text only)
        self.limit_note = ""  # the hub's queue capability refused a pod beyond the gang (hub_limits)
        self.unschedulable = False
        for task_spec in spec.tasks:
            self.add_task(TaskInfo(task_spec, self, index))
        self.sub_jobs: SubJobs = group_tasks(
            spec.uid,
            spec.sub_groups,
            spec.network_topology,
            ((t, t.spec.labels) for t in self.tasks.values()),
        )
        self.min_resources: IntArray = (
            index.vector(spec.min_resources)
            if spec.min_resources is not None
            else self._default_min_resources(index)
        )
        if self.podgroup_phase == "Inqueue" and self._gang_scheduled():
            # The close that bound its pods saw them Binding and kept Inqueue; Volcano's next
            # session finds it Running. Counted Inqueue its gang would be counted twice by the
            # quota plugins (allocated, and inqueue): the next job of its queue refused.
            self.podgroup_phase = "Running"

    def scheduled_task_num(self) -> int:
        """Tasks on a node or done (Volcano's getPodGroupPhase count at session close)."""
        scheduled = self.count(TaskStatus.Running, TaskStatus.Bound, TaskStatus.Failed, TaskStatus.Succeeded)
        return scheduled + sum(1 for t in self.by_status.get(TaskStatus.Releasing, {}).values() if t.node)

    def _gang_scheduled(self) -> bool:
        scheduled = self.scheduled_task_num()
        return scheduled > 0 and scheduled >= self.min_available

    def _default_min_resources(self, index: ResourceIndex) -> IntArray:
        """The controller's rule: the first minAvailable tasks in priority order."""
        ordered = sorted(self.tasks.values(), key=lambda t: (-t.priority, t.suffix, t.uid))
        out = np.zeros(len(index), dtype=np.int64)
        for task in ordered[: self.min_available]:
            out += index.vector(task.spec.request)
        return out

    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.by_status[task.status][task.uid] = task
        self.role_counts[task.role][task.status] += 1
        self.ready += task.status in _READY
        self.total_request += task.req
        if task.best_effort and task.status == TaskStatus.Pending:
            self.best_effort_pending += 1
        if task.status in ALLOCATED_STATUS:
            self.allocated += task.req

    def set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        old = task.status
        if old == status:
            return
        del self.by_status[old][task.uid]
        self.by_status[status][task.uid] = task
        counts = self.role_counts[task.role]
        counts[old] -= 1
        counts[status] += 1
        self.ready += (status in _READY) - (old in _READY)
        if task.best_effort:
            self.best_effort_pending += (status == TaskStatus.Pending) - (old == TaskStatus.Pending)
        was, now = old in ALLOCATED_STATUS, status in ALLOCATED_STATUS
        if was and not now:
            self.allocated -= task.req
        elif now and not was:
            self.allocated += task.req
        task.status = status

    def count(self, *statuses: TaskStatus) -> int:
        return sum(len(self.by_status.get(s, ())) for s in statuses)

    def ready_task_num(self) -> int:
        """Volcano's ReadyTaskNum: allocated-status and succeeded tasks."""
        return self.ready

    def waiting_task_num(self) -> int:
        return self.count(TaskStatus.Pipelined)

    def pending_best_effort_num(self) -> int:
        return self.best_effort_pending

    def role_ready(self, role: str) -> int:
        c = self.role_counts[role]
        return (
            c[TaskStatus.Allocated]
            + c[TaskStatus.Binding]
            + c[TaskStatus.Bound]
            + c[TaskStatus.Running]
            + c[TaskStatus.Succeeded]
        )

    def is_pending(self) -> bool:
        return self.podgroup_phase == "Pending"

    def __repr__(self) -> str:
        return f"Job({self.namespace}/{self.name})"


class QueueInfo:
    __slots__ = ("creation", "name", "parent", "priority", "reclaimable", "spec", "state", "weight")

    def __init__(self, spec: QueueSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.parent = spec.parent
        self.weight = spec.weight
        self.priority = spec.priority
        self.reclaimable = spec.reclaimable
        self.state = spec.state
        self.creation = spec.creation

    def __repr__(self) -> str:
        return f"Queue({self.name})"


def _check_roles(job: JobInfo) -> bool:
    """Volcano skips per-role checks when minAvailable < the sum of minTaskMember."""
    return job.min_available >= sum(job.task_min_available.values())


def need_continue_allocating(job: JobInfo) -> bool:
    """``JobInfo.NeedContinueAllocating``: keep trying other tasks after one found no node?"""
    if job.min_available == len(job.tasks):
        return False
    if not _check_roles(job):
        pending = sum(
            1 for t in job.by_status.get(TaskStatus.Pending, {}).values() if t.role not in job.fit_error_roles
        )
        return job.ready_task_num() + pending >= job.min_available
    return all(job.role_ready(role) >= job.task_min_available.get(role, 0) for role in job.fit_error_roles)
