"""A subgroup's HyperNode scores, as Volcano's network-topology-aware plugin gives them
(volcano-sh/volcano pkg/scheduler/plugins/network-topology-aware/network_topology_aware_test.go
TestHyperNodeOrderFn): binpack of the subgroup's tasks over each HyperNode's nodes, weighted per
resource and by the plugin weight, 0 where they overflow a weighted resource."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.scheduler.sched_table import conf
from tests.unit.scheduler.test_sched_subgroups import _hyper_nodes
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import (
    ACTIONS,
    PLUGINS,
    ClusterSnapshot,
    JobSpec,
    NodeSpec,
    QueueSpec,
    TaskSpec,
    TaskStatus,
    parse_conf,
)
from vglobal.scheduler.api import SubGroupSpec
from vglobal.scheduler.session import Session
from vglobal.scheduler.topology import SUBGROUP_ORDER, TOP_HYPERNODE, TREE_CACHE

LEAVES = {"s3": "s3-n1 s3-n2", "s4": "s4-n1 s4-n2", "s5": "s5-n1 s5-n2", "s6": "s6-n1 s6-n2"}
HYPERNODES = {
    **{name: (1, nodes) for name, nodes in LEAVES.items()},
    "s1": (2, f"{LEAVES['s3']} {LEAVES['s4']}"),
    "s2": (2, f"{LEAVES['s5']} {LEAVES['s6']}"),
    "s0": (3, " ".join(LEAVES.values())),
}
SHAPES = {"s3": ("2", "4G"), "s4": ("4", "4G"), "s5": ("2", "8G"), "s6": ("4", "8G")}
FOO = "example.com/foo"
# per leaf HyperNode: the example.com/foo of its -n1 node (its -n2 node has 0) in the second case
FOO_N1 = {"s3": "8", "s4": "8", "s5": "16", "s6": "16"}

CASES = [
    (
        "score hypernodes for a subjob with default plugin arguments",
        {},
        False,
        {
            "s0": 25.0,
            "s1": 58.3,
            "s2": 45.8,
            "s3": 0.0,
            "s4": 100.0,
            "s5": 0.0,
            "s6": 75.0,
            TOP_HYPERNODE: 25.0,
        },
    ),
    (
        "score hypernodes for a subjob with customized plugin arguments",
        {
            "weight": 10,
            "hypernode.binpack.cpu": 3,
            "hypernode.binpack.memory": 4,
            "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
            "hypernode.binpack.resources.nvidia.com/gpu": 2,
            "hypernode.binpack.resources.example.com/foo": 3,
            "hypernode.binpack.normal-pod.enable": True,
            "hypernode.binpack.normal-pod.fading": 0,
        },
        True,
        {
            "s0": 266.7,
            "s1": 700.0,
            "s2": 450.0,
            "s3": 0.0,
            "s4": 0.0,
            "s5": 0.0,
            "s6": 800.0,
            TOP_HYPERNODE: 266.7,
        },
    ),
]


def _state(foo: bool) -> ClusterSnapshot:
    """The Go case: 8 nodes under 4 leaf HyperNodes, 2 spines and a root; one subgroup of 2 pods."""
    nodes = []
    for leaf, (cpu, mem) in SHAPES.items():
        for suffix, extra in (("-n1", FOO_N1[leaf]), ("-n2", "0")):
            q: dict[str, str | int] = {"cpu": cpu, "memory": mem, "pods": 10}
            if foo:
                q[FOO] = extra
            nodes.append(NodeSpec(f"{leaf}{suffix}", ResourceVector.from_quantities(q)))
    request: dict[str, str | int] = {"cpu": "4", "memory": "4G", **({FOO: "8"} if foo else {})}
    tasks = tuple(
        TaskSpec(
            uid=f"p{i + 1}",
            name=f"p{i + 1}",
            job_uid="ns1/pg1",
            role="worker",
            index=i,
            request=ResourceVector.from_quantities(request),
            status=TaskStatus.Pending,
            labels={"volcano.sh/task-spec": "worker"},
            namespace="ns1",
            creation=i,
        )
        for i in range(2)
    )
    job = JobSpec(
        uid="ns1/pg1",
        name="pg1",
        namespace="ns1",
        queue="q1",
        priority=0,
        min_available=2,
        task_min_available={},
        creation=0,
        tasks=tasks,
        podgroup_phase="Inqueue",
        network_topology=("hard", 2),
        sub_groups=(SubGroupSpec("task1", match_label_keys=("volcano.sh/task-spec",)),),
    )
    return ClusterSnapshot(tuple(nodes), (job,), (QueueSpec("q1"),), _hyper_nodes(HYPERNODES))


@pytest.mark.parametrize(("case", "args", "foo", "expected"), CASES, ids=[c[0] for c in CASES])
def test_hyper_node_order_for_a_subgroup(
    case: str, args: dict[str, Any], foo: bool, expected: dict[str, float]
) -> None:
    plugin = {"name": "network-topology-aware", "arguments": args}
    ssn = Session(_state(foo), parse_conf(conf("allocate", [plugin])), actions=ACTIONS, plugins=PLUGINS)
    ssn.open()
    tree = ssn.cache[TREE_CACHE]
    (job,) = ssn.jobs.values()
    tasks = list(job.tasks.values())
    scores = ssn.cache[SUBGROUP_ORDER](tasks, tasks, {name: tree.rows[name] for name in expected})
    assert {n: round(s, 1) for n, s in scores.items()} == expected
