"""One scheduling session over a snapshot: build the infos, open plugins, mutate, close.

The primitives here (``allocate_on`` / ``pipeline_on`` / ``evict`` and their undos) change task
status, node arrays and plugin state at once, as Volcano's Statement and Session do; a Statement
records them so a gang can be committed or discarded.

The session is given the tables of actions and plugins its conf names (``vglobal.scheduler.tables``
holds the built-in ones; a test or the simulator may pass its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from vglobal.scheduler.api import ClusterSnapshot, CycleResult, TaskStatus
from vglobal.scheduler.conf import PluginOption, SchedulerConf
from vglobal.scheduler.framework import Plugin
from vglobal.scheduler.hooks import PluginHooks
from vglobal.scheduler.hub_limits import QueueRoom
from vglobal.scheduler.info import ON_NODE, JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.nodes import IntArray, NodeTable, ResourceIndex

FINISHED = (TaskStatus.Succeeded, TaskStatus.Failed)
DEVICE_GRANTS = "device-grants"  # session cache: task uid -> (node row, GPUs granted), by deviceshare

ActionFn = Callable[["Session"], None]
PluginFactory = Callable[[PluginOption], "Plugin[Session]"]


def _resource_names(state: ClusterSnapshot) -> Iterable[str]:
    for node in state.nodes:
        yield from node.allocatable
    for job in state.jobs:
        if job.min_resources is not None:
            yield from job.min_resources
        for task in job.tasks:
            yield from task.request
    for queue in state.queues:
        for vec in (queue.capability, queue.deserved, queue.guarantee):
            if vec is not None:
                yield from vec


class Session(PluginHooks):
    def __init__(
        self,
        state: ClusterSnapshot,
        conf: SchedulerConf,
        *,
        actions: Mapping[str, ActionFn],
        plugins: Mapping[str, PluginFactory],
        vectorized: bool = True,
    ) -> None:
        super().__init__(conf.tiers)
        self.conf = conf
        self.actions = actions
        self.vectorized = vectorized
        self.index = ResourceIndex(_resource_names(state))
        self.nodes = NodeTable(state.nodes, self.index)
        self.hyper_nodes = state.hyper_nodes
        self.total: IntArray = self.nodes.total()
        self.queues: dict[str, QueueInfo] = {
            q.name: QueueInfo(q) for q in sorted(state.queues, key=lambda q: q.name)
        }
        self.jobs: dict[str, JobInfo] = {}
        for spec in sorted(state.jobs, key=lambda j: j.uid):
            self.jobs[spec.uid] = JobInfo(spec, self.index)
        # tasks sitting on each node row (for preempt / reclaim victim lists)
        self.node_tasks: list[dict[str, TaskInfo]] = [{} for _ in range(len(self.nodes))]
        for job in self.jobs.values():
            for task in job.tasks.values():
                self._place_existing(task)
        self.plugins: list[list[Plugin[Session]]] = [[plugins[o.name](o) for o in t] for t in conf.tiers]
        self.binds: dict[str, str] = {}
        self.evictions: list[str] = []
        self.reasons: dict[str, str] = {}
        # plugins may park per-session data here (e.g. predicate caches shared by actions)
        self.cache: dict[str, Any] = {}

    def _place_existing(self, task: TaskInfo) -> None:
        row = self.nodes.row.get(task.node) if task.node else None
        if row is None or (task.status not in ON_NODE and task.status != TaskStatus.Pipelined):
            if task.status not in FINISHED:
                task.node = None  # a pending task's nominated node is not a placement
            return
        task.row = row
        self.node_tasks[row][task.uid] = task
        if task.status == TaskStatus.Pipelined:
            self.nodes.add_pipelined(row, task.req)
        else:
            self.nodes.add_used(row, task.req, releasing=task.status == TaskStatus.Releasing)
        self.nodes.add_pod(row, task.nonzero, task.host_ports, +1)

    # life cycle
    def open(self) -> None:
        for tier in self.plugins:
            for plugin in tier:
                plugin.on_session_open(self)
        self.compile_hooks()
        room = QueueRoom(self.queues, self.jobs, self.index.names)
        if room:  # the hub's capabilities hold whatever the conf (see hub_limits)
            self.add_builtin_allocatable(room.allocatable)
            self.add_event_handler(room.handler())

    def run_actions(self) -> None:
        for name in self.conf.actions:
            self.actions[name](self)

    def close(self) -> CycleResult:
        for tier in self.plugins:
            for plugin in tier:
                plugin.on_session_close(self)
        for job in self.jobs.values():
            # without gang (which explains unready gangs) still say why pending tasks found no node,
            # or that their queue refused them (a ready gang's pods beyond it, under the hub's limits)
            if job.uid not in self.reasons and job.by_status.get(TaskStatus.Pending):
                errors = sorted(set(job.nodes_fit_errors.values()))
                if job.limit_note:
                    errors.insert(0, job.limit_note)
                if errors:
                    self.reasons[job.uid] = "; ".join(errors)
        phases = {uid: self.podgroup_phase(job) for uid, job in self.jobs.items()}
        pipelined = {
            t.uid: t.node
            for job in self.jobs.values()
            for t in job.by_status.get(TaskStatus.Pipelined, {}).values()
            if t.node is not None
        }
        granted = self.cache.get(DEVICE_GRANTS, {})
        return CycleResult(
            binds=dict(self.binds),
            pipelined=pipelined,
            evictions=tuple(self.evictions),
            podgroup_phases=phases,
            reasons=dict(self.reasons),
            devices={uid: tuple(granted[uid][1]) for uid in self.binds if uid in granted},
        )

    def podgroup_phase(self, job: JobInfo) -> str:
        """Volcano's ``getPodGroupPhase`` at session close."""
        if job.count(TaskStatus.Running) and job.unschedulable:
            return "Unknown"
        scheduled = job.scheduled_task_num()
        if scheduled > 0 and scheduled >= job.min_available:
            if job.count(*FINISHED) == scheduled:
                return "Completed"
            return "Running"
        if job.podgroup_phase == "Inqueue":
            return "Inqueue"
        return "Pending"

    # events
    def _fire_allocate(self, task: TaskInfo) -> None:
        for handler in self.event_handlers:
            if handler.allocate is not None:
                handler.allocate(task)

    def _fire_deallocate(self, task: TaskInfo) -> None:
        for handler in self.event_handlers:
            if handler.deallocate is not None:
                handler.deallocate(task)

    # primitives (Statement records and undoes them)
    def allocate_on(self, task: TaskInfo, row: int) -> None:
        task.job.set_status(task, TaskStatus.Allocated)
        task.node, task.row = self.nodes.names[row], row
        self.nodes.add_used(row, task.req, releasing=False)
        self.nodes.add_pod(row, task.nonzero, task.host_ports, +1)
        self.node_tasks[row][task.uid] = task
        self._fire_allocate(task)

    def unallocate(self, task: TaskInfo) -> None:
        row = task.row
        assert row is not None
        self.nodes.remove_used(row, task.req, releasing=False)
        self.nodes.add_pod(row, task.nonzero, task.host_ports, -1)
        del self.node_tasks[row][task.uid]
        task.job.set_status(task, TaskStatus.Pending)
        task.node, task.row = None, None
        self._fire_deallocate(task)

    def pipeline_on(self, task: TaskInfo, row: int) -> None:
        task.job.set_status(task, TaskStatus.Pipelined)
        task.node, task.row = self.nodes.names[row], row
        self.nodes.add_pipelined(row, task.req)
        self.nodes.add_pod(row, task.nonzero, task.host_ports, +1)
        self.node_tasks[row][task.uid] = task
        self._fire_allocate(task)

    def unpipeline(self, task: TaskInfo) -> None:
        row = task.row
        assert row is not None
        self.nodes.remove_pipelined(row, task.req)
        self.nodes.add_pod(row, task.nonzero, task.host_ports, -1)
        del self.node_tasks[row][task.uid]
        task.job.set_status(task, TaskStatus.Pending)
        task.node, task.row = None, None
        self._fire_deallocate(task)

    def evict(self, task: TaskInfo) -> TaskStatus:
        previous = task.status
        row = task.row
        assert row is not None
        task.job.set_status(task, TaskStatus.Releasing)
        self.nodes.to_releasing(row, task.req)
        self._fire_deallocate(task)
        return previous

    def unevict(self, task: TaskInfo, previous: TaskStatus) -> None:
        row = task.row
        assert row is not None
        self.nodes.from_releasing(row, task.req)
        task.job.set_status(task, previous)
        self._fire_allocate(task)

    def dispatch(self, task: TaskInfo) -> None:
        """Bind: the task goes to Binding and into the cycle's binds."""
        task.job.set_status(task, TaskStatus.Binding)
        assert task.node is not None
        self.binds[task.uid] = task.node

    def record_eviction(self, task: TaskInfo) -> None:
        self.evictions.append(task.uid)

    def allocate(self, task: TaskInfo, row: int) -> None:
        """Session-level allocate (backfill): bind the job's allocated tasks once it is ready."""
        self.allocate_on(task, row)
        job = task.job
        if self.job_ready(job):
            for other in sorted(job.by_status.get(TaskStatus.Allocated, {}).values(), key=lambda t: t.uid):
                self.dispatch(other)

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)
