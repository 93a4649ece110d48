"""allocate_test.go TestAllocateWithNetWorkTopologies through the hub and the agent.

Two tier-1 HyperNodes of two nodes each under one tier-2 HyperNode (three tiers where the Go case
has them); every pod takes a whole node. Volcano checks the number of binds (MinimalBindCheck).
"""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, HyperNode, Node, Pod, Queue, check, conf, params

GO = "allocate_test.go TestAllocateWithNetWorkTopologies"
TIERS = conf("allocate", ["predicates", "gang", "network-topology-aware"])
TWO_TIERS = (
    HyperNode("s0", 1, ("s0-n1", "s0-n2")),
    HyperNode("s1", 1, ("s1-n3", "s1-n4")),
    HyperNode("s2", 2, ("s0", "s1")),
)
THREE_TIERS = (
    HyperNode("s3", 1, ("s3-n1", "s3-n2")),
    HyperNode("s4", 1, ("s4-n1", "s4-n2")),
    HyperNode("s5", 1, ("s5-n1", "s5-n2")),
    HyperNode("s6", 1, ("s6-n1", "s6-n2")),
    HyperNode("s1", 2, ("s3", "s4")),
    HyperNode("s2", 2, ("s5", "s6")),
    HyperNode("s0", 3, ("s1", "s2")),
)
MASTER = {"nodeRole": "master"}
# Soft topology at Volcano's HEAD is hard with the top tier allowed; the Go cases write tier 0.
SOFT = ("soft", None)


def nodes(hyper: tuple[HyperNode, ...]) -> list[Node]:
    return [Node(n, "2", "4Gi", pods=10) for h in hyper if h.tier == 1 for n in h.members]


def pods(n: int, running: tuple[str, ...] = ()) -> list[Pod]:
    """p1 the master, the others workers; the first ones run on `running`."""
    out = []
    for i in range(n):
        node = running[i] if i < len(running) else None
        out.append(Pod(f"c1/p{i + 1}", "pg1", "2", "4G", node=node, role="master" if i == 0 else "worker"))
    return out


def _case(
    name: str,
    min_member: int,
    topology: tuple[str, int | None],
    n: int,
    binds: int,
    running: tuple[str, ...] = (),
    hyper: tuple[HyperNode, ...] = TWO_TIERS,
    **kw: object,
) -> Case:
    return Case(
        GO,
        name,
        nodes=nodes(hyper),
        groups=[Group("pg1", queue="q1", min_member=min_member, topology=topology)],
        pods=pods(n, running),
        queues=[Queue("q1")],
        conf=TIERS,
        hyper_nodes=hyper,
        binds_count=binds,
        **kw,  # type: ignore[arg-type]
    )


AFFINITY = (HyperNode("s0", 1, ("s0-n1",)), HyperNode("s1", 1, ("s1-n2",)))


def _affinity(name: str, mode: tuple[str, int | None]) -> Case:
    return Case(
        GO,
        name,
        nodes=[Node("s0-n1", "2", "4Gi", pods=10), Node("s1-n2", "2", "4Gi", pods=10, labels=MASTER)],
        groups=[Group("pg1", queue="q1", min_member=1, topology=mode)],
        pods=[Pod("c1/p1", "pg1", "2", "4G", role="master", selector=MASTER)],
        queues=[Queue("q1")],
        conf=TIERS,
        hyper_nodes=AFFINITY,
        binds={"c1/p1": "s1-n2"},
    )


CASES = [
    _case("soft network topology constrain, can allocate job when resources are enough", 3, SOFT, 3, 3),
    _case("soft network topology constrain, can allocate job when minavailable < replicas", 1, SOFT, 2, 2),
    _affinity(
        "soft network topology constrain, two available hyperNodes, can allocate job to nodes with affinity",
        SOFT,
    ),
    _case(
        "soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough",
        2,
        SOFT,
        3,
        1,
        running=("s0-n1", "s0-n2"),
    ),
    _case(
        "soft network topology constrain and tasks in job rescheduled, can allocate job when resources are "
        "enough and minavailable = replicas",
        3,
        SOFT,
        3,
        1,
        running=("s0-n1", "s0-n2"),
    ),
    _case(
        "soft network topology constrain and tasks in job rescheduled, can allocate job when cross "
        "highestTierAllowed tier and hyperNodesInfo has three tier",
        2,
        SOFT,
        3,
        1,
        running=("s3-n1", "s3-n2"),
        hyper=THREE_TIERS,
    ),
    _case(
        "hard network topology constrain, can not allocate job when cross highestTierAllowed tier",
        3,
        ("hard", 1),
        3,
        0,
        waiting=["pg1"],
    ),
    _case(
        "hard network topology constrain, can allocate job when highestTierAllowed not reached",
        3,
        ("hard", 2),
        3,
        3,
    ),
    _case(
        "hard network topology constrain, can allocate job when multi hyperNodes are available",
        2,
        ("hard", 1),
        2,
        2,
    ),
    _case(
        "hard network topology constrain, can allocate job when minavailable < replicas", 1, ("hard", 1), 2, 2
    ),
    _affinity(
        "hard network topology constrain, two available hyperNodes, can allocate job to nodes with affinity",
        ("hard", 1),
    ),
    _case(
        "hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed not reached",
        2,
        ("hard", 2),
        3,
        1,
        running=("s0-n1", "s0-n2"),
    ),
    _case(
        "hard network topology constrain and tasks in job rescheduled, can not allocate job when cross "
        "highestTierAllowed tier",
        2,
        ("hard", 1),
        3,
        0,
        running=("s0-n1", "s0-n2"),
    ),
    _case(
        "hard network topology constrain and tasks in job rescheduled, can not allocate job when cross "
        "highestTierAllowed tier and hyperNodesInfo has three tier",
        2,
        ("hard", 1),
        3,
        0,
        running=("s3-n1", "s3-n2"),
        hyper=THREE_TIERS,
    ),
]

CASES += [
    Case(
        "allocate_test.go TestNodeLevelScoreWithNetWorkTopologies",
        "hard network topology constrain, allocate job to highest score hypeNode with node level binpack",
        nodes=[
            Node("s0-n1", "4", "8Gi", pods=10),
            Node("s0-n2", "8", "16Gi", pods=10),
            Node("s1-n3", "4", "8Gi", pods=10),
            Node("s1-n4", "8", "16Gi", pods=10),
        ],
        groups=[
            Group("pg1", queue="q1", min_member=2, topology=("hard", 1)),
            Group("pg2", queue="q1", min_member=2, phase="Running"),
        ],
        pods=[
            Pod("c1/p1", "pg1", "2", "4Gi", role="master"),
            Pod("c1/p2", "pg1", "4", "8Gi", role="worker"),
            Pod("c1/p3", "pg2", "2", "4Gi", node="s0-n1", role="master"),
            Pod("c1/p4", "pg2", "4", "8Gi", node="s0-n2", role="worker"),
        ],
        queues=[Queue("q1")],
        conf=conf("allocate", ["gang", "predicates", "binpack", "network-topology-aware"]),
        hyper_nodes=TWO_TIERS,
        binds={"c1/p1": "s0-n1", "c1/p2": "s0-n2"},
    ),
    Case(
        "allocate_test.go TestHyperNodeBinpackWithNetWorkTopologies",
        "hard network topology constrain, allocate task to node under LCAHyperNode",
        nodes=[Node(f"s{i // 2}-n{i + 1}", "4", "8Gi", pods=10) for i in range(6)],
        groups=[Group("pg1", queue="q1", min_member=4, topology=("hard", 2))],
        pods=[
            Pod(f"c1/p{i + 1}", "pg1", "4", "8Gi", role="master" if i == 0 else "worker") for i in range(4)
        ],
        queues=[Queue("q1")],
        conf=conf("allocate", ["gang", "predicates", "network-topology-aware"]),
        hyper_nodes=(
            HyperNode("s0", 1, ("s0-n1", "s0-n2")),
            HyperNode("s1", 1, ("s1-n3", "s1-n4")),
            HyperNode("s2", 1, ("s2-n5", "s2-n6")),
            HyperNode("s3", 2, ("s0", "s1", "s2")),
        ),
        binds_count=4,
        binds_per_hypernode=[2, 2],
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_network_topology(case: Case) -> None:
    check(case)
