"""allocate_test.go TestAllocate: Volcano's allocate cases through the hub and the agent."""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

GO = "allocate_test.go TestAllocate"
TIERS = conf("allocate", ["gang", "drf", "proportion", "predicates", "nodeorder"])
MASTER, WORKER = {"nodeRole": "master"}, {"nodeRole": "worker"}
ELASTIC = "elastic gangs: the hub charges the whole job, not its minAvailable pods"

CASES = [
    Case(
        GO,
        "prepredicate failed: node selector does not match",
        nodes=[Node("n1", "2", "4Gi", pods=10, labels=WORKER)],
        groups=[Group("pg1", min_member=1)],
        pods=[
            Pod("c1/p1", "pg1", role="master", selector=MASTER),
            Pod("c1/p2", "pg1", role="worker", selector=WORKER),
        ],
        queues=[Queue("c1")],
        conf=TIERS,
        binds={"c1/p2": "n1"},
    ),
    Case(
        GO,
        "prepredicate failed and tasks are not used up, continue on until min member meet",
        nodes=[
            Node("n1", "1", "2Gi", pods=10, labels=MASTER),
            Node("n2", "1", "2Gi", pods=10, labels=WORKER),
        ],
        groups=[Group("pg1", min_member=2, task_min={"master": 1, "worker": 1})],
        pods=[
            Pod("c1/p0", "pg1", role="master", selector=MASTER),
            Pod("c1/p1", "pg1", role="master", selector=MASTER),
            Pod("c1/p2", "pg1", role="worker", selector=WORKER),
            Pod("c1/p3", "pg1", role="worker", selector=WORKER),
        ],
        queues=[Queue("c1")],
        conf=TIERS,
        binds={"c1/p0": "n1", "c1/p2": "n2"},
        pending=ELASTIC,
    ),
    Case(
        GO,
        "master's min member can not be allocated, break from allocating",
        nodes=[
            Node("n1", "1", "2Gi", pods=10, labels=MASTER),
            Node("n2", "2", "2Gi", pods=10, labels=WORKER),
        ],
        groups=[Group("pg1", min_member=2, task_min={"master": 2, "worker": 0})],
        pods=[
            Pod("c1/p0", "pg1", role="master", selector=MASTER),
            Pod("c1/p1", "pg1", role="master", selector=MASTER),
            Pod("c1/p2", "pg1", role="worker", selector=WORKER),
            Pod("c1/p3", "pg1", role="worker", selector=WORKER),
        ],
        queues=[Queue("c1")],
        conf=TIERS,
        binds={},
    ),
    Case(
        GO,
        "one Job with two Pods on one node",
        nodes=[Node("n1", "2", "4Gi", pods=10)],
        groups=[Group("pg1")],
        pods=[Pod("c1/p1", "pg1"), Pod("c1/p2", "pg1")],
        queues=[Queue("c1")],
        conf=TIERS,
        binds={"c1/p1": "n1", "c1/p2": "n1"},
    ),
    Case(
        GO,
        "two Jobs on one node",
        nodes=[Node("n1", "2", "4G", pods=10)],
        groups=[Group("pg1"), Group("pg2", namespace="c2", queue="c2")],
        pods=[
            Pod("c1/pg1-p-1", "pg1"),
            Pod("c1/pg1-p-2", "pg1"),
            Pod("c2/pg2-p-1", "pg2"),
            Pod("c2/pg2-p-2", "pg2"),
        ],
        queues=[Queue("c1"), Queue("c2")],
        conf=TIERS,
        binds={"c2/pg2-p-1": "n1", "c1/pg1-p-1": "n1"},
    ),
    Case(
        GO,
        "high priority queue should not block others",
        nodes=[Node("n1", "2", "4G", pods=10)],
        groups=[Group("pg1"), Group("pg2", queue="c2")],
        pods=[Pod("c1/p1", "pg1", cpu="3"), Pod("c1/p2", "pg2")],
        queues=[Queue("c1"), Queue("c2")],
        conf=TIERS,
        binds={"c1/p2": "n1"},
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_allocate(case: Case) -> None:
    check(case)
