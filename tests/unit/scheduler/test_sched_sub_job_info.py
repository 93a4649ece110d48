"""Volcano's SubJobInfo tables (volcano-sh/volcano pkg/scheduler/api/sub_job_info_test.go), each row
named by its Go test and case: a subgroup's gang size, readiness, pipelining and priority."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from vglobal.scheduler.api import SubGroupSpec, TaskStatus
from vglobal.scheduler.subjobs import SubJobInfo, group_tasks

S = TaskStatus


@dataclass(frozen=True)
class T:
    """A task as a subgroup reads it."""

    uid: str
    status: TaskStatus
    best_effort: bool = False
    priority: int = 0
    row: int | None = None


def sub(min_available: int, *tasks: tuple[TaskStatus, bool]) -> SubJobInfo:
    s = SubJobInfo(gid="g", uid="u", min_available=min_available)
    for i, (status, best_effort) in enumerate(tasks):
        s.tasks[f"task{i + 1}"] = T(f"task{i + 1}", status, best_effort)
    return s


BE = True
READY = [(s, False) for s in (S.Allocated, S.Binding, S.Bound, S.Running, S.Succeeded)]

PIPELINED = [
    ("All tasks are pipelined", sub(3, *[(S.Pipelined, False)] * 3), True),
    (
        "Some tasks are ready and some are pipelined",
        sub(6, (S.Allocated, False), (S.Pipelined, False), *READY[1:]),
        True,
    ),
    (
        "Some tasks are pending best-effort and some are pipelined",
        sub(3, (S.Pending, BE), (S.Pending, BE), (S.Pipelined, False)),
        True,
    ),
    (
        "Some tasks are ready, some tasks are pending best-effort and some are pipelined",
        sub(8, (S.Pending, BE), (S.Pending, BE), (S.Allocated, False), (S.Pipelined, False), *READY[1:]),
        True,
    ),
    (
        "Some tasks are pending not best-effort",
        sub(8, (S.Pending, BE), (S.Pending, False), (S.Allocated, False), (S.Pipelined, False), *READY[1:]),
        False,
    ),
    (
        "Some tasks are failed",
        sub(
            8,
            (S.Pending, BE),
            (S.Pending, BE),
            (S.Allocated, False),
            (S.Pipelined, False),
            *READY[1:4],
            (S.Failed, False),
        ),
        False,
    ),
    ("Some tasks are unknown", sub(3, (S.Pending, BE), (S.Pending, BE), (S.Unknown, False)), False),
]


@pytest.mark.parametrize(("case", "sji", "expected"), PIPELINED, ids=[c[0] for c in PIPELINED])
def test_is_pipelined(case: str, sji: SubJobInfo, expected: bool) -> None:
    """TestSubJobInfo_IsPipelined"""
    assert sji.is_pipelined() is expected


READY_CASES = [
    ("All tasks are pipelined", sub(3, *[(S.Pending, False)] * 3), False),  # the Go case's tasks pend
    ("All tasks are pending bestEffort", sub(2, (S.Pending, BE), (S.Pending, BE)), True),
    ("Some tasks are pending best-effort and some are waiting", sub(6, (S.Pending, BE), *READY), True),
    ("Some tasks are failed", sub(1, (S.Failed, False)), False),
    ("Some tasks are pending not best-effort", sub(7, (S.Pending, BE), (S.Pending, False), *READY), False),
]


@pytest.mark.parametrize(("case", "sji", "expected"), READY_CASES, ids=[c[0] for c in READY_CASES])
def test_is_ready(case: str, sji: SubJobInfo, expected: bool) -> None:
    """TestSubJobInfo_IsReady"""
    assert sji.is_ready() is expected


NEW = [
    # (case, policy size, topology, match value, want MinAvailable, want MatchIndex, want topology)
    ("All field provided", 4, ("hard", 1), "1", 4, 1, ("hard", 1)),
    ("No SubGroupSize provided", 1, ("hard", 1), "1", 1, 1, ("hard", 1)),  # subGroupSize defaults to 1
    ("No NetworkTopology provided", 2, None, "0", 2, 0, None),
]


@pytest.mark.parametrize(
    ("case", "size", "topology", "value", "min_available", "index", "want_topology"),
    NEW,
    ids=[c[0] for c in NEW],
)
def test_new_sub_job_info(
    case: str,
    size: int,
    topology: tuple[str, int] | None,
    value: str,
    min_available: int,
    index: int,
    want_topology: tuple[str, int] | None,
) -> None:
    """TestNewSubJobInfo: a subgroup takes its gang size, index and topology from its policy."""
    policy = SubGroupSpec("p", size=size, match_label_keys=("k",), network_topology=topology)
    subs = group_tasks("ns/job", (policy,), None, [(T("t", S.Pending), {"k": value})])
    (got,) = subs.by_uid.values()
    assert (got.gid, got.uid) == ("ns/job/p", f"ns/job/p-{value}")
    assert (got.min_available, got.match_index, got.network_topology) == (
        min_available,
        index,
        want_topology,
    )


def test_new_sub_job_info_without_a_policy() -> None:
    """TestNewSubJobInfo "No policy provided": the job's default subgroup, gang size 1."""
    subs = group_tasks("ns/job", (SubGroupSpec("p", size=4, match_label_keys=("k",)),), None, [
        (T("t", S.Pending), {"other": "1"}),
    ])  # fmt: skip
    (got,) = subs.by_uid.values()
    assert (got.uid, got.min_available, got.network_topology) == ("ns/job", 1, None)


@pytest.mark.parametrize(
    ("case", "priorities", "expected"),
    [
        ("When taskPriorities is empty, it should return 0", [], 0),
        ("When taskPriorities has only one element", [1], 1),
        ("When taskPriorities has multiple elements", [1, 2, 3], 3),
        ("When the highest element is negative, 0 (the Go code starts from 0)", [-1, -2, -3], 0),
    ],
)
def test_task_highest_priority(case: str, priorities: list[int], expected: int) -> None:
    """TestSubJobInfo_getTaskHighestPriority"""
    s = SubJobInfo(gid="g", uid="u", min_available=1)
    for i, p in enumerate(priorities):
        s.tasks[f"task{i}"] = T(f"task{i}", S.Pending, priority=p)
    assert s.priority == expected
