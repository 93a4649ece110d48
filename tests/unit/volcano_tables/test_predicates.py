"""predicates_test.go TestEventHandler, TestNodeNum, TestPodAntiAffinity through the hub and the agent."""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

WORKER = {"role": "worker"}
HOSTNAME = "kubernetes.io/hostname"
# Required anti-affinity to every pod labelled role=worker on the same host.
ANTI_WORKER = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {
                    "matchExpressions": [{"key": "role", "operator": "In", "values": ["worker"]}]
                },
                "topologyKey": HOSTNAME,
            }
        ]
    }
}
CLASSES = {"p1": 1, "p2": 2, "low-priority": 10, "high-priority": 100000}


def pg(name: str, min_member: int, priority: str, phase: str = "Inqueue") -> Group:
    return Group(
        name, namespace="ns1", queue="q1", min_member=min_member, priority_class=priority, phase=phase
    )


CASES = [
    Case(
        "predicates_test.go TestEventHandler",
        "pod-deallocate",
        nodes=[
            Node("node1", "14", "14k", pods=10, labels={"selector": "worker", HOSTNAME: "node1"}),
            Node("node2", "3", "3k", pods=10, labels={HOSTNAME: "node2"}),
        ],
        groups=[pg("pg1", 2, "p2"), pg("pg2", 1, "p1")],
        pods=[
            Pod(
                "ns1/worker-1",
                "pg1",
                "3",
                "3k",
                labels=WORKER,
                selector={"selector": "worker"},
                affinity=ANTI_WORKER,
            ),
            Pod("ns1/worker-2", "pg1", "5", "5k", labels=WORKER, affinity=ANTI_WORKER),
            Pod("ns1/worker-3", "pg2", "4", "4k", labels=WORKER, affinity=ANTI_WORKER),
        ],
        queues=[Queue("q1")],
        conf=conf("allocate", ["predicates", "gang", "priority"]),
        classes=CLASSES,
        binds={"ns1/worker-3": "node1"},
    ),
    Case(
        "predicates_test.go TestNodeNum",
        "pod-predicate",
        nodes=[Node("node1", "4", "4k", pods=2, labels={"selector": "worker"})],
        groups=[pg("pg1", 2, "p2"), pg("pg2", 1, "p1")],
        pods=[
            Pod("ns1/worker-1", "pg1", "0", "0", labels=WORKER, selector={"selector": "worker"}),
            Pod("ns1/worker-2", "pg1", "0", "0", labels=WORKER),
            Pod("ns1/worker-3", "pg2", "0", "0", labels=WORKER),
        ],
        queues=[Queue("q1")],
        conf=conf("allocate, backfill", ["predicates"]),
        classes=CLASSES,
        binds={"ns1/worker-1": "node1", "ns1/worker-2": "node1"},
        waiting=["pg2"],
    ),
    Case(
        "predicates_test.go TestPodAntiAffinity",
        "pod-anti-affinity",
        nodes=[Node("n1", "12", "12G", pods=2, labels={HOSTNAME: "node1"})],
        groups=[pg("pg1", 0, "low-priority", "Running"), pg("pg2", 1, "high-priority")],
        pods=[
            Pod(
                "ns1/worker-1",
                "pg1",
                "3",
                "3G",
                node="n1",
                labels=WORKER,
                affinity=ANTI_WORKER,
                priority_class="high-priority",
            ),
            Pod("ns1/worker-2", "pg1", "3", "3G", node="n1", priority_class="low-priority"),
            Pod(
                "ns1/worker-3",
                "pg2",
                "3",
                "3G",
                labels=WORKER,
                affinity=ANTI_WORKER,
                priority_class="high-priority",
            ),
        ],
        queues=[Queue("q1", capability={"cpu": "9", "memory": "9G"})],
        conf=conf("allocate, preempt", ["predicates", "priority"]),
        classes=CLASSES,
        evicted=[],
        pipelined={},
        # The hub keeps worker-1 (its own PriorityClass is high) out of its victims and sees that
        # worker-3's required anti-affinity closes n1 while worker-1 runs there: evicting worker-2
        # for the pod slot would not do, so pg2 waits at the hub and nothing is evicted, as with
        # the Go test's topology-aware preemption (victims by pod priority). The agent never gets
        # pg2, so its preempt (by job priority) does not come into it.
        waiting=["pg2"],
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_predicates(case: Case) -> None:
    check(case)
