"""hdrf_test.go TestHDRF (hierarchical DRF) through the hub and the agent.

The Go test reads each job's allocation after one allocate; here the binds per PodGroup are counted.
"""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

GO = "hdrf_test.go TestHDRF"
TIERS = conf(
    "allocate",
    [
        {"name": "drf", "enableHierarchy": True},
        {"name": "proportion", "enableAllocatable": False, "enableOverused": False},
    ],
)
HIERARCHY = "volcano.sh/hierarchy"
WEIGHTS = "volcano.sh/hierarchy-weights"
# Hierarchical DRF reads the queues' hierarchy annotations, but the agent builds its queues with
# names only (vglobal/agent/snapshot.py cluster_snapshot): its drf sees flat queues, which in these
# two Go cases share the cluster as the hierarchy does. A case where they differ would fail here.


def pods(group: str, n: int, cpu: str, memory: str) -> list[Pod]:
    return [Pod(f"default/{group}-p{i}", group, cpu, memory) for i in range(n)]


def hq(name: str, path: str, weights: str) -> Queue:
    return Queue(name, annotations={HIERARCHY: path, WEIGHTS: weights})


def counts(groups: dict[str, int]) -> dict[str, str]:
    """The first `n` pods of each group, as the expectation of binds by name."""
    return {f"default/{g}-p{i}": "n" for g, n in groups.items() for i in range(n)}


CASES = [
    Case(
        GO,
        "rescaling test",
        nodes=[Node("n", "10", "10G", pods=50)],
        groups=[
            Group("pg1", namespace="default", queue="root-sci"),
            Group("pg21", namespace="default", queue="root-eng-dev"),
            Group("pg22", namespace="default", queue="root-eng-prod"),
        ],
        pods=pods("pg1", 10, "1", "1G") + pods("pg21", 10, "1", "0") + pods("pg22", 10, "0", "1G"),
        queues=[
            hq("root-sci", "root/sci", "100/50"),
            hq("root-eng-dev", "root/eng/dev", "100/50/50"),
            hq("root-eng-prod", "root/eng/prod", "100/50/50"),
        ],
        conf=TIERS,
        binds=counts({"pg1": 5, "pg21": 5, "pg22": 5}),
    ),
    Case(
        GO,
        "blocking nodes test",
        nodes=[Node("n", "30", "30G", pods=500)],
        groups=[
            Group("pg1", namespace="default", queue="root-pg1"),
            Group("pg2", namespace="default", queue="root-pg2"),
            Group("pg31", namespace="default", queue="root-pg3-pg31"),
            Group("pg32", namespace="default", queue="root-pg3-pg31"),
            Group("pg4", namespace="default", queue="root-pg4"),
        ],
        pods=pods("pg1", 30, "1", "0")
        + pods("pg2", 30, "1", "0")
        + pods("pg31", 30, "1", "0")
        + pods("pg32", 30, "0", "1G")
        + pods("pg4", 30, "0", "1G"),
        queues=[
            hq("root-pg1", "root/pg1", "100/25"),
            hq("root-pg2", "root/pg2", "100/25"),
            hq("root-pg3-pg31", "root/pg3/pg31", "100/25/50"),
            hq("root-pg3-pg32", "root/pg3/pg32", "100/25/50"),
            hq("root-pg4", "root/pg4", "100/25"),
        ],
        conf=TIERS,
        binds=counts({"pg1": 10, "pg2": 10, "pg31": 10, "pg32": 15, "pg4": 15}),
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_hdrf(case: Case) -> None:
    check(case)
