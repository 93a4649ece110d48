"""A Statement: the operations of one gang, committed together or undone in reverse order.

It works on the session's primitives, named here as a protocol: the session's hooks name Statement
(a job allocator returns one), so this module must not import the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from vglobal.scheduler.api import TaskStatus
from vglobal.scheduler.info import TaskInfo


class Primitives(Protocol):
    """What a Statement does and undoes on the session (``vglobal.scheduler.session.Session``)."""

    def allocate_on(self, task: TaskInfo, row: int) -> None: ...
    def unallocate(self, task: TaskInfo) -> None: ...
    def pipeline_on(self, task: TaskInfo, row: int) -> None: ...
    def unpipeline(self, task: TaskInfo) -> None: ...
    def evict(self, task: TaskInfo) -> TaskStatus: ...
    def unevict(self, task: TaskInfo, previous: TaskStatus) -> None: ...
    def dispatch(self, task: TaskInfo) -> None: ...
    def record_eviction(self, task: TaskInfo) -> None: ...


@dataclass(slots=True)
class Operation:
    kind: str  # "allocate" | "pipeline" | "evict"
    task: TaskInfo
    previous: TaskStatus = TaskStatus.Pending


class Statement:
    __slots__ = ("operations", "ssn")

    def __init__(self, ssn: Primitives) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    def allocate(self, task: TaskInfo, row: int) -> None:
        self.ssn.allocate_on(task, row)
        self.operations.append(Operation("allocate", task))

    def pipeline(self, task: TaskInfo, row: int) -> None:
        self.ssn.pipeline_on(task, row)
        self.operations.append(Operation("pipeline", task))

    def evict(self, task: TaskInfo) -> None:
        previous = self.ssn.evict(task)
        self.operations.append(Operation("evict", task, previous))

    def save_operations(self) -> tuple[tuple[str, TaskInfo, int | None], ...]:
        """What this statement did, to replay later with ``recover_operations`` (dry runs)."""
        return tuple((op.kind, op.task, op.task.row) for op in self.operations)

    def recover_operations(self, saved: tuple[tuple[str, TaskInfo, int | None], ...]) -> None:
        for kind, task, row in saved:
            if kind == "evict":
                self.evict(task)
            elif row is not None and kind == "allocate":
                self.allocate(task, row)
            elif row is not None:
                self.pipeline(task, row)

    def discard(self) -> None:
        for op in reversed(self.operations):
            if op.kind == "allocate":
                self.ssn.unallocate(op.task)
            elif op.kind == "pipeline":
                self.ssn.unpipeline(op.task)
            else:
                self.ssn.unevict(op.task, op.previous)
        self.operations.clear()

    def commit(self) -> None:
        for op in self.operations:
            if op.kind == "evict":
                self.ssn.record_eviction(op.task)
            elif op.kind == "allocate" and op.task.status == TaskStatus.Allocated:
                self.ssn.dispatch(op.task)
        self.operations.clear()
