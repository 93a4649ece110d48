"""A PodGroup left Inqueue while its pods run counts as Running for the quota plugins: its gang is
allocated, not also waiting to be enqueued, so the queue has room for the next job."""

from __future__ import annotations

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.scheduler import TaskStatus

R = TaskStatus.Running


@pytest.mark.parametrize("plugin", ["proportion", "capacity"])
def test_a_running_gang_left_inqueue_is_not_counted_twice(plugin: str) -> None:
    # 8 cpu; a runs 4 pods of 1 cpu (minAvailable 4) and its PodGroup still says Inqueue
    nodes = [node("n1", "8", "64Gi")]
    groups = [
        Group("c1/a", "q", min_member=4, phase="Inqueue"),
        Group("c1/b", "q", min_member=4, phase="Pending"),
    ]
    pods = [pod(f"c1/a-{i}", "c1/a", status=R, node="n1") for i in range(4)]
    pods += [pod(f"c1/b-{i}", "c1/b") for i in range(4)]
    result = Case(
        "inqueue-running",
        nodes,
        groups,
        pods,
        [queue("q")],
        conf("enqueue, allocate", ["priority", "gang"], ["predicates", plugin]),
        phases={"c1/a": "Running"},
    ).check()
    assert sorted(result.binds) == [f"c1/b-{i}" for i in range(4)]
