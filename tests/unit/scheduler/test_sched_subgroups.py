"""allocate with SubGroups: Volcano's own cases (subgroup_cases.py) through run_cycle.

Each case is a PodGroup with a subGroupPolicy over pods, nodes and HyperNodes; the binds must be
exactly Volcano's (count, and the pod -> node map where the Go case checks it)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.scheduler.subgroup_cases import CASES
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.partition import PARTITION_ID_LABEL, TASK_SPEC_LABEL
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import (
    ClusterSnapshot,
    JobSpec,
    NodeSpec,
    QueueSpec,
    TaskSpec,
    TaskStatus,
    parse_conf,
    run_cycle,
)
from vglobal.scheduler.api import SubGroupSpec

# the Go test's tiers: gang, predicates, network-topology-aware
CONF = """
actions: "allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: network-topology-aware}]
"""


def _pairs(text: str) -> dict[str, str]:
    if text == "-":
        return {}
    return dict(item.split("=", 1) for item in text.split(","))


def _hyper_nodes(spec: dict[str, tuple[int, str]]) -> tuple[ResolvedHyperNode, ...]:
    members = {name: (tier, frozenset(nodes.split())) for name, (tier, nodes) in spec.items()}

    def parent(name: str) -> str | None:
        tier, nodes = members[name]
        above = [(t, n) for n, (t, ns) in members.items() if t > tier and nodes <= ns]
        return min(above)[1] if above else None

    return tuple(
        ResolvedHyperNode(name, tier, parent=parent(name), nodes=nodes)
        for name, (tier, nodes) in members.items()
    )


def snapshot(case: dict[str, Any]) -> ClusterSnapshot:
    nodes = []
    for line in case["nodes"]:
        name, cpu, mem, pods, *labels = line.split()
        alloc = ResourceVector.from_quantities({"cpu": cpu, "memory": mem, "pods": int(pods)})
        nodes.append(NodeSpec(name, alloc, labels=_pairs(labels[0]) if labels else {}))
    tasks = []
    for i, line in enumerate(case["pods"]):
        name, node, phase, cpu, mem, labels, *selector = line.split()
        pod_labels = _pairs(labels)
        tasks.append(
            TaskSpec(
                uid=name,
                name=name,
                job_uid="c1/pg1",
                role=pod_labels.get("volcano.sh/task-spec", ""),
                index=i,
                request=ResourceVector.from_quantities({"cpu": cpu, "memory": mem}),
                status=TaskStatus.Running if phase == "Running" else TaskStatus.Pending,
                node=None if node == "-" else node,
                node_selector=_pairs(selector[0]) if selector else {},
                labels=pod_labels,
                namespace="c1",
                creation=i,
            )
        )
    minimum, mode, tier = case["pg"]
    policies = tuple(
        SubGroupSpec(
            name=name,
            size=size,
            min_groups=min_groups,
            match_label_keys=tuple(keys),
            network_topology=(p_mode, p_tier) if p_mode else None,
        )
        for name, keys, p_mode, p_tier, size, min_groups in case["policies"]
    )
    job = JobSpec(
        uid="c1/pg1",
        name="pg1",
        namespace="c1",
        queue="q1",
        priority=0,
        min_available=minimum,
        task_min_available={},
        creation=0,
        tasks=tuple(tasks),
        podgroup_phase="Inqueue",
        network_topology=(mode, tier) if mode else None,
        sub_groups=policies,
    )
    return ClusterSnapshot(tuple(nodes), (job,), (QueueSpec("q1"),), _hyper_nodes(case["hypernodes"]))


@pytest.mark.parametrize("case", CASES, ids=[c["go_case"] for c in CASES])
def test_allocate_with_partition_policy_network_topology(case: dict[str, Any]) -> None:
    result = run_cycle(snapshot(case), parse_conf(CONF))
    assert len(result.binds) == case["binds"], (dict(result.binds), result.reasons)
    if case["bind_map"]:
        assert dict(result.binds) == case["bind_map"]


def _two_partitioned_tasks(first: str, second: str) -> ClusterSnapshot:
    """Task ``first`` has one 1-pod partition, ``second`` one 2-pod partition, each within a tier-1
    HyperNode; s0 has 2 nodes, s1 has 1 (the job's own topology soft)."""
    nodes = tuple(
        NodeSpec(n, ResourceVector.from_quantities({"cpu": "2", "memory": "4Gi", "pods": 10}))
        for n in ("s0-n1", "s0-n2", "s1-n3")
    )
    tasks = tuple(
        TaskSpec(
            uid=f"p{i}",
            name=f"p{i}",
            job_uid="c1/pg1",
            role=task,
            index=i,
            request=ResourceVector.from_quantities({"cpu": "2", "memory": "1Gi"}),
            status=TaskStatus.Pending,
            labels={TASK_SPEC_LABEL: task, PARTITION_ID_LABEL: "0"},
            namespace="c1",
            creation=i,
        )
        for i, task in enumerate((first, second, second))
    )
    policies = tuple(
        SubGroupSpec(
            name=task,
            size=size,
            min_groups=1,
            match_labels={TASK_SPEC_LABEL: task},
            match_label_keys=(PARTITION_ID_LABEL,),
            network_topology=("hard", 1),
        )
        for task, size in ((first, 1), (second, 2))
    )
    job = JobSpec(
        uid="c1/pg1",
        name="pg1",
        namespace="c1",
        queue="q1",
        priority=0,
        min_available=3,
        task_min_available={},
        creation=0,
        tasks=tasks,
        podgroup_phase="Inqueue",
        network_topology=("soft", 2),
        sub_groups=policies,
    )
    hns = _hyper_nodes({"s0": (1, "s0-n1 s0-n2"), "s1": (1, "s1-n3"), "top": (2, "s0-n1 s0-n2 s1-n3")})
    return ClusterSnapshot(nodes, (job,), (QueueSpec("q1"),), hns)


@pytest.mark.parametrize(("first", "second"), [("a", "b"), ("b", "a")])
def test_partitions_of_two_tasks_are_placed_whichever_task_comes_first(first: str, second: str) -> None:
    # subgroups go in name order (equal MatchIndex); the binpack score sends the 1-pod partition to
    # the HyperNode it fills, so the 2-pod partition still finds two nodes of one switch
    result = run_cycle(_two_partitioned_tasks(first, second), parse_conf(CONF))
    binds = dict(result.binds)
    assert binds["p0"] == "s1-n3"
    assert {binds["p1"], binds["p2"]} == {"s0-n1", "s0-n2"}
