"""Plugin base class and the shapes of the functions plugins register on a session.

Plugins follow Volcano's life cycle: ``on_session_open`` registers functions (orders, votes,
predicates, scores, event handlers) on the session; ``on_session_close`` writes back status.
Vote results use Volcano's constants: PERMIT = 1, ABSTAIN = 0, REJECT = -1.

``Plugin`` is generic in the session it opens on (each plugin is a ``Plugin[Session]``): the session
module imports this one, so this one names no session type and the two form no import cycle.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from vglobal.scheduler.nodes import BoolArray, FloatArray, IntArray

if TYPE_CHECKING:
    from vglobal.scheduler.conf import PluginOption
    from vglobal.scheduler.heap import GoHeap
    from vglobal.scheduler.info import JobInfo, QueueInfo, TaskInfo
    from vglobal.scheduler.statement import Statement

PERMIT = 1
ABSTAIN = 0
REJECT = -1


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """One predicate over all nodes: ``passed[row]``; ``reason`` names the failure for the rest.

    ``unresolvable`` mirrors k8s UnschedulableAndUnresolvable: preemption cannot fix such a node.
    """

    reason: str
    passed: BoolArray
    unresolvable: bool = True


JobOrderFn = Callable[["JobInfo", "JobInfo"], int]
QueueOrderFn = Callable[["QueueInfo", "QueueInfo"], int]
TaskOrderFn = Callable[["TaskInfo", "TaskInfo"], int]
JobBoolFn = Callable[["JobInfo"], bool]
JobVoteFn = Callable[["JobInfo"], int]
JobValidFn = Callable[["JobInfo"], "str | None"]  # None = valid, else the reason
QueueBoolFn = Callable[["QueueInfo"], bool]
AllocatableFn = Callable[["QueueInfo", "TaskInfo"], bool]
PreemptiveFn = Callable[["QueueInfo", "TaskInfo"], bool]
PrePredicateFn = Callable[["TaskInfo"], "str | None"]
PredicateFn = Callable[["TaskInfo"], Sequence[NodeFilter]]
NodeOrderFn = Callable[["TaskInfo", int], float]  # one node (row)
BatchNodeOrderFn = Callable[["TaskInfo", IntArray], FloatArray]  # many rows at once
VictimsFn = Callable[["TaskInfo", Sequence["TaskInfo"]], "tuple[list[TaskInfo], int]"]
VictimQueueOrderFn = Callable[["QueueInfo", "QueueInfo", "QueueInfo"], int]
JobEnqueuedFn = Callable[["JobInfo"], None]
HyperNodeOrderFn = Callable[["JobInfo", Mapping[str, IntArray]], Mapping[str, float]]
# (pending-task heap, job, queue) -> None if not handled, else (statement, tasks left); the plugin
# keeps the session it registered the function on
JobAllocatorFn = Callable[
    ["GoHeap[TaskInfo]", "JobInfo", "QueueInfo"],
    "tuple[Statement | None, GoHeap[TaskInfo] | None] | None",
]


@dataclass(frozen=True, slots=True)
class EventHandler:
    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


SessionT = TypeVar("SessionT")


class Plugin(abc.ABC, Generic[SessionT]):
    """Base class; subclasses set ``name`` and register functions in ``on_session_open``."""

    name = ""

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        self.arguments: dict[str, Any] = dict(option.arguments)

    @abc.abstractmethod
    def on_session_open(self, ssn: SessionT) -> None:
        """Register this plugin's functions with the session."""

    def on_session_close(self, ssn: SessionT) -> None:
        return None

    # Argument helpers: Volcano reads conf arguments leniently (strings or numbers).
    def arg_float(self, key: str, default: float) -> float:
        value = self.arguments.get(key)
        if value is None:
            return default
        try:
            return float(value)
        except (TypeError, ValueError):
            return default

    def arg_int(self, key: str, default: int) -> int:
        value = self.arguments.get(key)
        if value is None:
            return default
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default

    def arg_bool(self, key: str, default: bool) -> bool:
        value = self.arguments.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return default
