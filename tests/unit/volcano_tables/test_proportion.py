"""proportion_test.go TestEnqueueAndAllocable and TestAllocate through the hub and the agent."""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

ENQUEUE = "proportion_test.go TestEnqueueAndAllocable"
ALLOCATE = "proportion_test.go TestAllocate"
ALL_ENABLED = conf("enqueue, allocate", ["proportion"])
ENQUEUEABLE = conf(
    "enqueue, allocate", [{"name": "proportion", "enableAllocatable": False, "enableOverused": False}]
)
ALLOCATABLE = conf(
    "enqueue, allocate", [{"name": "proportion", "enableOverused": False, "enableJobEnqueued": False}]
)
NODES = [Node("n1", "2", "2G", pods=10), Node("n2", "2", "2G", pods=10)]
QUEUES = [
    Queue("q1", capability={"cpu": "2", "memory": "2G"}),
    Queue("q2", capability={"cpu": "3", "memory": "3G"}),
]
RUNNING = [
    Pod("ns1/pod1", "pg1", cpu="1", memory="2G", node="n1"),
    Pod("ns1/pod2", "pg2", cpu="2", memory="1G", node="n2"),
]


def pg(name: str, queue: str, phase: str = "Pending") -> Group:
    return Group(name, namespace="ns1", queue=queue, min_member=1, phase=phase)


GROUPS = [pg("pg1", "q1", "Running"), pg("pg2", "q2", "Running")]

CASES = [
    Case(
        ENQUEUE,
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
        nodes=NODES,
        groups=[*GROUPS, pg("pg3", "q1")],
        pods=[*RUNNING, Pod("ns1/pod3", "pg3", cpu="1", memory="0")],
        queues=QUEUES,
        conf=ALL_ENABLED,
        binds={"ns1/pod3": "n1"},
    ),
    Case(
        ENQUEUE,
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
        nodes=NODES,
        groups=[*GROUPS, pg("pg4", "q2")],
        pods=[*RUNNING, Pod("ns1/pod4", "pg4", cpu="0", memory="1G")],
        queues=QUEUES,
        conf=ALL_ENABLED,
        binds={"ns1/pod4": "n2"},
    ),
    Case(
        ENQUEUE,
        "case2: exceed capacity, can not enqueue",
        nodes=NODES,
        groups=[*GROUPS, pg("pg5", "q1")],
        pods=[*RUNNING, Pod("ns1/pod5", "pg5")],
        queues=QUEUES,
        conf=ENQUEUEABLE,
        binds={},
        waiting=["pg5"],
    ),
    Case(
        ENQUEUE,
        "case3: exceed deserved, can not allocate",
        nodes=NODES,
        groups=[*GROUPS, pg("pg5", "q1")],
        pods=[*RUNNING, Pod("ns1/pod5", "pg5")],
        queues=QUEUES,
        conf=ALLOCATABLE,
        binds={},
        waiting=["pg5"],
    ),
    Case(
        ENQUEUE,
        "case4: queue with  non-open state, can not enqueue",
        nodes=NODES,
        groups=[pg("pg6", "q3")],
        pods=[Pod("ns1/pod6", "pg6")],
        queues=[Queue("q3", capability={"cpu": "3", "memory": "3G"}, state="Closed")],
        conf=ENQUEUEABLE,
        binds={},
        waiting=["pg6"],
    ),
    Case(
        ALLOCATE,
        "case0: Pods are assigned according to the order of Queue Priority in which PGs are placed",
        nodes=[Node("n1", "2", "4Gi", pods=10), Node("n2", "2", "4Gi", pods=10)],
        groups=[pg("pg1", "q1", "Running"), pg("pg2", "q2", "Inqueue"), pg("pg3", "q3", "Inqueue")],
        pods=[
            Pod("ns1/p1", "pg1", cpu="2", memory="4Gi", node="n1"),
            Pod("ns1/p2", "pg2", cpu="2", memory="4Gi"),
            Pod("ns1/p3", "pg3", cpu="2", memory="4Gi"),
        ],
        queues=[
            Queue("q1", priority=5, capability={"cpu": "2", "memory": "4Gi"}),
            Queue("q2", priority=1, capability={"cpu": "2", "memory": "4Gi"}),
            Queue("q3", priority=10, capability={"cpu": "2", "memory": "4Gi"}),
        ],
        conf=conf("allocate, reclaim", ["proportion"]),
        binds={"ns1/p3": "n2"},
        waiting=["pg2"],
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_proportion(case: Case) -> None:
    check(case)
