"""allocate: scenarios ported from Volcano's allocate tests, plus gang and pipelining."""

from __future__ import annotations

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.scheduler import TaskStatus

DRF_PROPORTION = conf("allocate", ["drf", "proportion"])
GANG = conf("allocate", ["priority", "gang"], ["drf", "predicates", "proportion", "nodeorder"])

CASES = [
    Case(
        "one job with two pods on one node",
        nodes=[node("n1", "2", "4Gi")],
        groups=[Group("c1/pg1", "c1")],
        pods=[pod("c1/p1", "c1/pg1"), pod("c1/p2", "c1/pg1")],
        queues=[queue("c1")],
        conf=DRF_PROPORTION,
        binds={"c1/p1": "n1", "c1/p2": "n1"},
    ),
    Case(
        "two jobs in two equal queues share one node",
        nodes=[node("n1", "2", "4G")],
        groups=[Group("c1/pg1", "c1"), Group("c2/pg2", "c2")],
        pods=[
            pod("c1/p1", "c1/pg1"),
            pod("c1/p2", "c1/pg1"),
            pod("c2/p1", "c2/pg2"),
            pod("c2/p2", "c2/pg2"),
        ],
        queues=[queue("c1"), queue("c2")],
        conf=DRF_PROPORTION,
        binds={"c1/p1": "n1", "c2/p1": "n1"},
    ),
    Case(
        "a queue whose pod fits nowhere does not block the others",
        nodes=[node("n1", "2", "4G")],
        groups=[Group("c1/pg1", "c1"), Group("c1/pg2", "c2")],
        pods=[pod("c1/p1", "c1/pg1", "3"), pod("c1/p2", "c1/pg2")],
        queues=[queue("c1"), queue("c2")],
        conf=DRF_PROPORTION,
        binds={"c1/p2": "n1"},
    ),
    Case(
        "gang: a job that cannot place minMember tasks binds nothing",
        nodes=[node("n1", "2", "4Gi"), node("n2", "2", "4Gi")],
        groups=[Group("c1/pg1", "c1", min_member=5)],
        pods=[pod(f"c1/pg1-w-{i}", "c1/pg1") for i in range(5)],
        queues=[queue("c1")],
        conf=GANG,
        binds={},
        phases={"c1/pg1": "Inqueue"},
    ),
    Case(
        "gang: a job that fits binds all its tasks, the one that does not binds none",
        nodes=[node("n1", "2", "4Gi"), node("n2", "2", "4Gi")],
        groups=[Group("c1/pg1", "c1", min_member=3), Group("c1/pg2", "c1", min_member=2)],
        pods=[pod(f"c1/pg1-w-{i}", "c1/pg1") for i in range(3)]
        + [pod(f"c1/pg2-w-{i}", "c1/pg2") for i in range(2)],
        queues=[queue("c1")],
        conf=GANG,
        binds={"c1/pg1-w-0": "n1", "c1/pg1-w-1": "n2", "c1/pg1-w-2": "n1"},
    ),
    Case(
        "Pending PodGroups are skipped when enqueue is configured",
        nodes=[node("n1", "4", "8Gi")],
        groups=[Group("c1/pg1", "c1", min_member=1, phase="Pending")],
        pods=[pod("c1/p1", "c1/pg1")],
        queues=[queue("c1")],
        conf=conf("enqueue, allocate", ["gang"], ["predicates", "proportion"]).replace(
            "enqueue, allocate", "allocate"
        ),
        binds={"c1/p1": "n1"},
    ),
    Case(
        "pipelined onto resources a releasing task frees",
        nodes=[node("n1", "2", "4Gi")],
        groups=[Group("c1/old", "c1", min_member=1, phase="Running"), Group("c1/new", "c1", min_member=1)],
        pods=[
            pod("c1/old-w-0", "c1/old", "2", status=TaskStatus.Releasing, node="n1"),
            pod("c1/new-w-0", "c1/new", "2"),
        ],
        queues=[queue("c1")],
        conf=conf("allocate", ["priority", "gang"], ["drf", "predicates", "nodeorder"]),
        binds={},
        pipelined={"c1/new-w-0": "n1"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_allocate(case: Case) -> None:
    case.check()


def test_gang_reason_names_the_missing_resource() -> None:
    case = CASES[3]
    case.conf = conf("allocate", ["priority", "gang"], ["drf", "predicates", "nodeorder"])
    result = case.check()
    assert result.reasons["c1/pg1"].startswith("5/5 tasks in gang unschedulable")
    assert "0/2 nodes are available: 2 Insufficient cpu." in result.reasons["c1/pg1"]


def test_ready_gang_is_reported_running_once_bound() -> None:
    case = Case(
        "bound gang",
        nodes=[node("n1", "4", "8Gi")],
        groups=[Group("c1/pg1", "c1", min_member=2)],
        pods=[pod(f"c1/pg1-w-{i}", "c1/pg1", status=TaskStatus.Running, node="n1") for i in range(2)],
        queues=[queue("c1")],
        conf=GANG,
        binds={},
        phases={"c1/pg1": "Running"},
    )
    case.check()
