"""Queue quotas: proportion, capacity (flat and hierarchical), overcommit, hierarchical drf."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import TaskStatus

R = TaskStatus.Running


def test_proportion_shares_by_weight() -> None:
    nodes = [node("n1", "8", "64Gi")]
    groups = [Group("c1/a", "qa"), Group("c1/b", "qb")]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(8)] + [pod(f"c1/b-{i}", "c1/b") for i in range(8)]
    result = Case(
        "weights",
        nodes,
        groups,
        pods,
        [queue("qa", 3), queue("qb", 1)],
        conf("allocate", ["drf", "proportion", "predicates"]),
    ).check()
    got_a = sum(1 for uid in result.binds if uid.startswith("c1/a-"))
    assert (got_a, len(result.binds) - got_a) == (6, 2)


def test_proportion_capability_caps_a_queue() -> None:
    nodes = [node("n1", "8", "64Gi")]
    groups = [Group("c1/a", "qa")]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(8)]
    cap = ResourceVector.from_quantities({"cpu": "3"})
    result = Case(
        "cap",
        nodes,
        groups,
        pods,
        [queue("qa", capability=cap)],
        conf("allocate", ["proportion", "predicates"]),
    ).check()
    assert len(result.binds) == 3


def test_capacity_flat_lets_a_queue_borrow_up_to_capability() -> None:
    nodes = [node("n1", "8", "64Gi")]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(8)]
    q = queue(
        "qa",
        deserved=ResourceVector.from_quantities({"cpu": "2"}),
        capability=ResourceVector.from_quantities({"cpu": "5"}),
    )
    result = Case(
        "capacity", nodes, [Group("c1/a", "qa")], pods, [q], conf("allocate", ["capacity", "predicates"])
    ).check()
    assert len(result.binds) == 5


def test_capacity_hierarchy_caps_children_by_the_parent() -> None:
    nodes = [node("n1", "16", "64Gi")]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(8)] + [pod(f"c1/b-{i}", "c1/b") for i in range(8)]
    queues = [
        queue("root"),
        queue("eng", capability=ResourceVector.from_quantities({"cpu": "6"})),
        queue("a", parent="eng"),
        queue("b", parent="root"),
    ]
    groups = [Group("c1/a", "a"), Group("c1/b", "b")]
    plugins: list[Any] = [{"name": "capacity", "enableHierarchy": True}, "predicates"]
    result = Case("tree", nodes, groups, pods, queues, conf("allocate", plugins)).check()
    got_a = sum(1 for uid in result.binds if uid.startswith("c1/a-"))
    assert got_a == 6  # inherits eng's capability
    assert len(result.binds) - got_a == 8


def test_capacity_hierarchy_rejects_jobs_in_parent_queues() -> None:
    nodes = [node("n1", "16", "64Gi")]
    queues = [queue("root"), queue("eng"), queue("a", parent="eng")]
    plugins: list[Any] = [{"name": "capacity", "enableHierarchy": True}, "predicates"]
    Case(
        "parent",
        nodes,
        [Group("c1/e", "eng")],
        [pod("c1/e-0", "c1/e")],
        queues,
        conf("allocate", plugins),
        binds={},
    ).check()


def test_enqueue_with_overcommit_admits_while_min_resources_fit() -> None:
    nodes = [node("n1", "4", "64Gi")]
    groups = [
        Group("c1/a", "c1", min_member=3, phase="Pending"),
        Group("c1/b", "c1", min_member=3, phase="Pending"),
    ]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(3)] + [pod(f"c1/b-{i}", "c1/b") for i in range(3)]
    Case(
        "enqueue",
        nodes,
        groups,
        pods,
        [queue("c1")],
        conf("enqueue", ["gang"], ["overcommit"]),
        phases={"c1/a": "Inqueue", "c1/b": "Pending"},
    ).check()


def test_enqueue_then_allocate_in_one_session() -> None:
    nodes = [node("n1", "4", "64Gi")]
    groups = [Group("c1/a", "c1", min_member=2, phase="Pending")]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(2)]
    Case(
        "enqueue",
        nodes,
        groups,
        pods,
        [queue("c1")],
        conf("enqueue, allocate", ["gang"], ["proportion", "predicates"]),
        binds={"c1/a-0": "n1", "c1/a-1": "n1"},
    ).check()


def test_drf_hierarchy_orders_queues_by_weighted_share() -> None:
    """root/eng (weight 3) and root/sci (weight 1): eng gets three pods for each of sci's."""
    nodes = [node("n1", "8", "64Gi")]
    queues = [
        queue("eng", annotations={"volcano.sh/hierarchy": "root/eng", "volcano.sh/hierarchy-weights": "1/3"}),
        queue("sci", annotations={"volcano.sh/hierarchy": "root/sci", "volcano.sh/hierarchy-weights": "1/1"}),
    ]
    groups = [Group("c1/e", "eng"), Group("c1/s", "sci")]
    pods = [pod(f"c1/e-{i}", "c1/e") for i in range(8)] + [pod(f"c1/s-{i}", "c1/s") for i in range(8)]
    plugin = {"name": "drf", "enableHierarchy": True}
    result = Case("hdrf", nodes, groups, pods, queues, conf("allocate", [plugin, "predicates"])).check()
    eng = sum(1 for uid in result.binds if uid.startswith("c1/e-"))
    assert (eng, len(result.binds) - eng) == (6, 2)


def test_proportion_enqueue_rejects_what_exceeds_the_real_capability() -> None:
    cap = ResourceVector.from_quantities({"cpu": "2"})
    nodes = [node("n1", "8", "64Gi")]
    groups = [Group("c1/a", "qa", min_member=3, phase="Pending")]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(3)]
    result = Case(
        "cap",
        nodes,
        groups,
        pods,
        [queue("qa", capability=cap)],
        conf("enqueue", ["gang"], ["proportion"]),
        phases={"c1/a": "Pending"},
    ).check()
    assert "not enough resources to enqueue" in result.reasons["c1/a"]


def test_running_job_that_becomes_unschedulable_is_unknown() -> None:
    """Volcano: Running tasks plus an Unschedulable condition from this session -> Unknown."""
    nodes = [node("n1", "2", "8Gi")]
    groups = [Group("c1/a", "c1", min_member=3)]
    pods = [
        pod("c1/a-0", "c1/a", status=R, node="n1"),
        pod("c1/a-1", "c1/a", status=R, node="n1"),
        pod("c1/a-2", "c1/a"),
    ]
    Case(
        "unknown",
        nodes,
        groups,
        pods,
        [queue("c1")],
        conf("allocate", ["gang"], ["predicates"]),
        binds={},
        phases={"c1/a": "Unknown"},
    ).check()


NIL = ResourceVector()  # a PodGroup without minResources
CPU4 = ResourceVector.from_quantities({"cpu": "4", "memory": "4G"})
ENQUEUE_CONF = conf("enqueue", ["drf", "proportion", "gang"])
ENQUEUE_CASES = [
    Case(
        "when podgroup status is inqueue",
        nodes=[],
        groups=[Group("c1/pg1", "c1", min_member=2, phase="Inqueue", min_resources=NIL)],
        pods=[pod("c1/p1", "c1/pg1"), pod("c1/p2", "c1/pg1")],
        queues=[queue("c1", capability=CPU4), queue("c2", capability=CPU4)],
        conf=ENQUEUE_CONF,
        phases={"c1/pg1": "Inqueue"},
    ),
    Case(
        "when podgroup status is pending",
        nodes=[],
        groups=[
            Group("c1/pg1", "c1", min_member=1, phase="Pending", min_resources=NIL),
            Group("c1/pg2", "c2", min_member=1, phase="Pending", min_resources=NIL),
        ],
        pods=[pod("c1/p1", "c1/pg1", "3"), pod("c1/p2", "c1/pg2")],
        queues=[queue("c1", capability=CPU4), queue("c2", capability=CPU4)],
        conf=ENQUEUE_CONF,
        phases={"c1/pg1": "Inqueue", "c1/pg2": "Inqueue"},
    ),
    Case(
        "when podgroup status is running",
        nodes=[],
        groups=[Group("c1/pg1", "c1", min_member=2, phase="Running", min_resources=NIL)],
        pods=[pod("c1/p1", "c1/pg1", status=R), pod("c1/p2", "c1/pg1", status=R)],
        queues=[queue("c1", capability=CPU4)],
        conf=ENQUEUE_CONF,
        phases={"c1/pg1": "Running"},
    ),
    Case(
        "podgroup cannot enqueue because its queue c1 does not exist",
        nodes=[],
        groups=[Group("c1/pg1", "c1", min_member=0, phase="Pending", min_resources=NIL)],
        pods=[],
        queues=[queue("c2", capability=CPU4)],
        conf=ENQUEUE_CONF,
        phases={"c1/pg1": "Pending"},
    ),
    Case(
        "podgroup cannot enqueue because queue resources are less than its minResources",
        nodes=[],
        groups=[
            Group(
                "c1/pg1",
                "c1",
                min_member=1,
                phase="Pending",
                min_resources=ResourceVector.from_quantities({"cpu": "8", "memory": "8G"}),
            )
        ],
        pods=[],
        queues=[queue("c1", capability=ResourceVector.from_quantities({"cpu": "1", "memory": "1G"}))],
        conf=ENQUEUE_CONF,
        phases={"c1/pg1": "Pending"},
    ),
]


@pytest.mark.parametrize("case", ENQUEUE_CASES, ids=lambda c: c.name)
def test_enqueue_ported(case: Case) -> None:
    result = case.check()
    if "does not exist" in case.name:
        assert result.reasons["c1/pg1"] == "queue c1 not found"


def test_reason_says_the_queue_refused_the_gang() -> None:
    cap = ResourceVector.from_quantities({"cpu": "2"})
    nodes = [node("n1", "8", "64Gi")]
    groups = [Group("c1/a", "qa", min_member=3)]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(3)]
    result = Case(
        "quota",
        nodes,
        groups,
        pods,
        [queue("qa", capability=cap)],
        conf("allocate", ["gang"], ["proportion", "predicates"]),
        binds={},
    ).check()
    assert "queue qa cannot take task a-2" in result.reasons["c1/a"]
