"""allocate_test.go TestAllocate: Volcano's allocate cases through the hub and the agent."""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

GO = "allocate_test.go TestAllocate"
TIERS = conf("allocate", ["gang", "drf", "proportion", "predicates", "nodeorder"])
MASTER, WORKER = {"nodeRole": "master"}, {"nodeRole": "worker"}

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

FAIR = "allocate_test.go TestFareShareAllocate"
FAIR_TIERS = conf(
    "allocate",
    [
        {"name": "drf"},
        {"name": "proportion", "enableAllocatable": False},
        {"name": "predicates"},
        {"name": "nodeorder"},
    ],
)
NODE_1 = [Node("node-1", "5", "5G", pods=10)]


def ns1(name: str, queue: str, phase: str = "Inqueue") -> Group:
    return Group(name, namespace="ns-1", queue=queue, phase=phase)


CASES += [
    Case(
        FAIR,
        "queue with low DRF share value has high priority, should allocate first",
        nodes=NODE_1,
        groups=[ns1("pg-small-1", "q-1", "Running"), ns1("pg-large-1", "q-1"), ns1("pg-large-2", "q-2")],
        pods=[
            Pod("ns-1/pod-small-1", "pg-small-1", node="node-1"),
            Pod("ns-1/pod-large-1", "pg-large-1", "2", "2G"),
            Pod("ns-1/pod-large-2", "pg-large-2", "3", "2G"),
        ],
        queues=[Queue("q-1"), Queue("q-2")],
        conf=FAIR_TIERS,
        binds={"ns-1/pod-large-2": "node-1"},
    ),
    Case(
        FAIR,
        "queue's DRF share value will be updated and its priority will change before it is put back "
        "into the priority queue",
        nodes=NODE_1,
        groups=[
            ns1("pg-small-1", "q-1", "Running"),
            ns1("pg-large-1", "q-1"),
            ns1("pg-small-2", "q-2"),
            ns1("pg-large-2", "q-2"),
        ],
        pods=[
            Pod("ns-1/pod-small-1", "pg-small-1", node="node-1"),
            Pod("ns-1/pod-large-1", "pg-large-1", "2", "2G"),
            Pod("ns-1/pod-large-2", "pg-large-2", "2", "2G"),
            Pod("ns-1/pod-small-2", "pg-small-2", "1", "1G"),
        ],
        queues=[Queue("q-1"), Queue("q-2")],
        conf=FAIR_TIERS,
        binds={"ns-1/pod-large-1": "node-1", "ns-1/pod-large-2": "node-1"},
    ),
    Case(
        FAIR,
        "queue's one jobs has no pending tasks, should be put back to queues for next job",
        nodes=NODE_1,
        groups=[ns1("pg-1", "q-1", "Running"), ns1("pg-2", "q-1")],
        pods=[Pod("ns-1/pod-1", "pg-1", node="node-1"), Pod("ns-1/pod-2", "pg-2", "2", "2G")],
        queues=[Queue("q-1")],
        conf=FAIR_TIERS,
        binds={"ns-1/pod-2": "node-1"},
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_allocate(case: Case) -> None:
    check(case)
