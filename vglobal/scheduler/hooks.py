"""Registration and voting of plugin functions, exactly as Volcano's ``session_plugins.go``.

Each extension point keeps ``{plugin name: fn}``; after all plugins opened, ``compile_hooks``
flattens them into per-tier lists in conf order, keeping only plugins whose ``enableXxx`` flag is
on. The dispatch methods then implement Volcano's combination rules (first non-zero order, AND,
per-tier votes, victim intersection).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vglobal.scheduler.conf import PluginOption
from vglobal.scheduler.framework import (
    ABSTAIN,
    PERMIT,
    REJECT,
    AllocatableFn,
    BatchNodeOrderFn,
    EventHandler,
    HyperNodeOrderFn,
    JobAllocatorFn,
    JobBoolFn,
    JobEnqueuedFn,
    JobOrderFn,
    JobValidFn,
    JobVoteFn,
    NodeFilter,
    NodeOrderFn,
    PredicateFn,
    PreemptiveFn,
    PrePredicateFn,
    QueueBoolFn,
    QueueOrderFn,
    TaskOrderFn,
    VictimQueueOrderFn,
    VictimsFn,
)
from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo
from vglobal.scheduler.nodes import IntArray

# extension point -> the enableXxx flag that switches it (Volcano's PluginOption fields)
_FLAGS = {
    "job_order": "JobOrder",
    "queue_order": "QueueOrder",
    "task_order": "TaskOrder",
    "job_ready": "JobReady",
    "job_pipelined": "JobPipelined",
    "job_valid": None,
    "job_enqueueable": "JobEnqueued",
    "job_enqueued": "JobEnqueued",
    "job_starving": "JobStarving",
    "preemptable": "Preemptable",
    "reclaimable": "Reclaimable",
    "overused": "Overused",
    "allocatable": "Allocatable",
    "preemptive": "Preemptive",
    "pre_predicate": "Predicate",
    "predicate": "Predicate",
    "node_order": "NodeOrder",
    "batch_node_order": "NodeOrder",
    "victim_queue_order": "QueueOrder",
    "hyper_node_order": "HyperNodeOrder",
    "job_allocator": None,
}


class PluginHooks:
    def __init__(self, options: Sequence[Sequence[PluginOption]]) -> None:
        self.tier_options = options
        self._fns: dict[str, dict[str, Any]] = {point: {} for point in _FLAGS}
        self._tiers: dict[str, list[list[Any]]] = {}
        self.event_handlers: list[EventHandler] = []

    def _add(self, point: str, plugin: str, fn: Any) -> None:
        self._fns[point][plugin] = fn

    def add_job_order_fn(self, plugin: str, fn: JobOrderFn) -> None:
        self._add("job_order", plugin, fn)

    def add_queue_order_fn(self, plugin: str, fn: QueueOrderFn) -> None:
        self._add("queue_order", plugin, fn)

    def add_task_order_fn(self, plugin: str, fn: TaskOrderFn) -> None:
        self._add("task_order", plugin, fn)

    def add_job_ready_fn(self, plugin: str, fn: JobBoolFn) -> None:
        self._add("job_ready", plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: JobVoteFn) -> None:
        self._add("job_pipelined", plugin, fn)

    def add_job_valid_fn(self, plugin: str, fn: JobValidFn) -> None:
        self._add("job_valid", plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: JobVoteFn) -> None:
        self._add("job_enqueueable", plugin, fn)

    def add_job_enqueued_fn(self, plugin: str, fn: JobEnqueuedFn) -> None:
        self._add("job_enqueued", plugin, fn)

    def add_job_starving_fn(self, plugin: str, fn: JobBoolFn) -> None:
        self._add("job_starving", plugin, fn)

    def add_preemptable_fn(self, plugin: str, fn: VictimsFn) -> None:
        self._add("preemptable", plugin, fn)

    def add_reclaimable_fn(self, plugin: str, fn: VictimsFn) -> None:
        self._add("reclaimable", plugin, fn)

    def add_overused_fn(self, plugin: str, fn: QueueBoolFn) -> None:
        self._add("overused", plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: AllocatableFn) -> None:
        self._add("allocatable", plugin, fn)

    def add_preemptive_fn(self, plugin: str, fn: PreemptiveFn) -> None:
        self._add("preemptive", plugin, fn)

    def add_pre_predicate_fn(self, plugin: str, fn: PrePredicateFn) -> None:
        self._add("pre_predicate", plugin, fn)

    def add_predicate_fn(self, plugin: str, fn: PredicateFn) -> None:
        self._add("predicate", plugin, fn)

    def add_node_order_fn(self, plugin: str, fn: NodeOrderFn, batch: BatchNodeOrderFn | None = None) -> None:
        """A per-node score; ``batch`` computes the same score for many rows at once (numpy).

        The session uses ``batch`` when scoring is vectorised and ``fn`` node by node otherwise.
        """
        self._add("node_order", plugin, (fn, batch))

    def add_batch_node_order_fn(self, plugin: str, fn: BatchNodeOrderFn) -> None:
        """A score that needs all candidate nodes at once (normalised across them)."""
        self._add("batch_node_order", plugin, fn)

    def add_victim_queue_order_fn(self, plugin: str, fn: VictimQueueOrderFn) -> None:
        self._add("victim_queue_order", plugin, fn)

    def add_hyper_node_order_fn(self, plugin: str, fn: HyperNodeOrderFn) -> None:
        """Score candidate HyperNodes (name -> node rows) for a job; summed over plugins."""
        self._add("hyper_node_order", plugin, fn)

    def add_job_allocator_fn(self, plugin: str, fn: JobAllocatorFn) -> None:
        """Take over allocate for some jobs (e.g. hard network topology).

        The fn returns None when it does not handle the job; otherwise ``(statement or None,
        remaining tasks or None)`` as Volcano's ``allocateResourceForTasksWithTopology`` does.
        """
        self._add("job_allocator", plugin, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def compile_hooks(self) -> None:
        for point, flag in _FLAGS.items():
            fns = self._fns[point]
            tiers: list[list[Any]] = []
            for tier in self.tier_options:
                tiers.append(
                    [fns[o.name] for o in tier if o.name in fns and (flag is None or o.enabled(flag))]
                )
            self._tiers[point] = tiers
        self._flat = {point: [fn for tier in tiers for fn in tier] for point, tiers in self._tiers.items()}

    def add_builtin_allocatable(self, fn: AllocatableFn) -> None:
        """After ``compile_hooks``: a check no conf turns off (allocate and preempt ask it)."""
        self._flat["allocatable"].append(fn)
        self._flat["preemptive"].append(fn)

    def has(self, point: str) -> bool:
        return bool(self._flat[point])

    # Orders: the first non-zero answer decides; then Volcano's fixed tie-breaks.
    def job_order(self, left: JobInfo, right: JobInfo) -> bool:
        for fn in self._flat["job_order"]:
            j = fn(left, right)
            if j != 0:
                return bool(j < 0)
        if left.creation != right.creation:
            return left.creation < right.creation
        return left.uid < right.uid

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> bool:
        for fn in self._flat["queue_order"]:
            j = fn(left, right)
            if j != 0:
                return bool(j < 0)
        if left.creation != right.creation:
            return left.creation < right.creation
        return left.name < right.name

    def task_compare(self, left: TaskInfo, right: TaskInfo) -> int:
        for fn in self._flat["task_order"]:
            j = fn(left, right)
            if j != 0:
                return int(j)
        for a, b in ((left.suffix, right.suffix), (left.creation, right.creation)):
            if a != b:
                return -1 if a < b else 1
        return -1 if left.uid < right.uid else (1 if left.uid > right.uid else 0)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> bool:
        return self.task_compare(left, right) < 0

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        for fn in self._flat["victim_queue_order"]:
            j = fn(left, right, preemptor)
            if j != 0:
                return int(j)
        return 0

    # Job predicates
    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self._flat["job_ready"])

    def _tier_vote(self, point: str, job: JobInfo) -> bool:
        for tier in self._tiers[point]:
            permitted = False
            for fn in tier:
                vote = fn(job)
                if vote < 0:
                    return False
                if vote > 0:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._tier_vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._tier_vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self._flat["job_enqueued"]:
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        for tier in self._tiers["job_starving"]:
            if tier:
                return all(fn(job) for fn in tier)
        return False

    def job_valid(self, job: JobInfo) -> str | None:
        for fn in self._flat["job_valid"]:
            reason = fn(job)
            if reason is not None:
                return str(reason)
        return None

    # Queue checks
    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self._flat["overused"])

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self._flat["allocatable"])

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self._flat["preemptive"])

    # Nodes
    def pre_predicate(self, task: TaskInfo) -> str | None:
        for fn in self._flat["pre_predicate"]:
            reason = fn(task)
            if reason is not None:
                return str(reason)
        return None

    def hyper_node_order(self, job: JobInfo, hyper_nodes: Mapping[str, IntArray]) -> dict[str, float]:
        scores = dict.fromkeys(hyper_nodes, 0.0)
        for fn in self._flat["hyper_node_order"]:
            for name, score in fn(job, hyper_nodes).items():
                scores[name] = scores.get(name, 0.0) + score
        return scores

    def job_allocators(self) -> list[JobAllocatorFn]:
        return list(self._flat["job_allocator"])

    def node_order_fns(self) -> list[tuple[NodeOrderFn | None, BatchNodeOrderFn | None]]:
        return list(self._flat["node_order"])

    def batch_node_order_fns(self) -> list[BatchNodeOrderFn]:
        return list(self._flat["batch_node_order"])

    def predicate_filters(self, task: TaskInfo) -> list[NodeFilter]:
        out: list[NodeFilter] = []
        for fn in self._flat["predicate"]:
            out.extend(fn(task))
        return out

    # Victims: per tier, an abstaining plugin is skipped, an empty answer clears the tier,
    # otherwise intersect; the first tier with a non-empty result decides.
    def _victims(self, point: str, actor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        victims: list[TaskInfo] | None = None
        for tier in self._tiers[point]:
            for fn in tier:
                found, vote = fn(actor, candidates)
                if vote == ABSTAIN:
                    continue
                if not found:
                    victims = None
                    break
                if victims is None:
                    victims = list(found)
                else:
                    keep = {t.uid for t in found}
                    victims = [v for v in victims if v.uid in keep] or None
            if victims is not None:
                return victims
        return victims or []

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._victims("preemptable", preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._victims("reclaimable", reclaimer, reclaimees)


__all__ = ["ABSTAIN", "PERMIT", "REJECT", "PluginHooks"]
