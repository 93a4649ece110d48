"""allocate: scenarios ported from Volcano's allocate tests, plus gang and pipelining."""

from __future__ import annotations

import pytest

from tests.unit.scheduler.sched_table import Case, Group, build_state, conf, node, pod, queue
from vglobal.scheduler import ACTIONS, PLUGINS, TaskStatus, parse_conf

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


def test_elastic_job_places_beyond_min_available_one_task_per_turn() -> None:
    """minAvailable 2 of 4 replicas: the gang commits at 2, then extra tasks go in while they fit."""
    case = Case(
        "elastic",
        nodes=[node("n1", "3", "8Gi")],
        groups=[Group("c1/pg1", "c1", min_member=2, task_min={"w": 2})],
        pods=[pod(f"c1/pg1-w-{i}", "c1/pg1") for i in range(4)],
        queues=[queue("c1")],
        conf=GANG,
    )
    result = case.check()
    assert sorted(result.binds) == ["c1/pg1-w-0", "c1/pg1-w-1", "c1/pg1-w-2"]
    assert "c1/pg1" not in result.reasons  # the gang is ready


def test_every_role_needs_its_min_task_member() -> None:
    """Room for the two workers but not the ps: the whole job waits."""
    pods = [pod("c1/pg1-ps-0", "c1/pg1", "2", role="ps")] + [
        pod(f"c1/pg1-worker-{i}", "c1/pg1", role="worker") for i in range(2)
    ]
    case = Case(
        "roles",
        nodes=[node("n1", "3", "8Gi")],
        groups=[Group("c1/pg1", "c1", min_member=3, task_min={"ps": 1, "worker": 2})],
        pods=pods,
        queues=[queue("c1")],
        conf=conf("allocate", ["priority", "gang"], ["predicates", "nodeorder"]),
        binds={},
    )
    result = case.check()
    assert result.reasons["c1/pg1"].startswith("3/3 tasks in gang unschedulable")
    bigger = Case("roles fit", [node("n1", "4", "8Gi")], case.groups, pods, case.queues, case.conf)
    assert len(bigger.check().binds) == 3


@pytest.mark.parametrize(
    ("phase", "fit_errors", "unschedulable"),
    [("Inqueue", False, False), ("Inqueue", True, True), ("Pending", False, True)],
)
def test_gang_unschedulable_condition(phase: str, fit_errors: bool, unschedulable: bool) -> None:
    """gang_test.go TestOnSessionCloseConditions: a waiting Inqueue gang is not Unschedulable."""
    from vglobal.scheduler.session import Session

    state = build_state(
        [node("n1", "10", "10G", pods=10)],
        [Group("c1/pg1", "c1", min_member=2, phase=phase)],
        [pod("c1/p1", "c1/pg1"), pod("c1/p2", "c1/pg1")],
        [queue("c1")],
    )
    ssn = Session(state, parse_conf(GANG), actions=ACTIONS, plugins=PLUGINS)
    ssn.open()
    job = ssn.jobs["c1/pg1"]
    if fit_errors:
        job.nodes_fit_errors["c1/p1"] = "0/1 nodes are available: 1 Insufficient cpu."
    ssn.close()
    assert job.unschedulable is unschedulable
    assert ssn.reasons["c1/pg1"].startswith("2/2 tasks in gang unschedulable")


def test_a_node_without_a_pods_capacity_gets_the_kubelet_default() -> None:
    from vglobal.model.resources import ResourceVector
    from vglobal.scheduler import NodeSpec

    bare = NodeSpec("n1", ResourceVector.from_quantities({"cpu": "4", "memory": "8Gi"}))
    Case(
        "no pods",
        [bare],
        [Group("c1/j", "c1")],
        [pod("c1/j-0", "c1/j")],
        [queue("c1")],
        GANG,
        binds={"c1/j-0": "n1"},
    ).check()
