"""Plugins: order, scoring, predicate and quota scenarios (after Volcano's plugin tests)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import Taint, TaskStatus

R = TaskStatus.Running


def test_drf_puts_the_job_with_the_lower_share_first() -> None:
    nodes = [node("n1", "2", "4Gi")]
    groups = [Group("c1/j1", "c1"), Group("c1/j2", "c1")]
    pods = [pod("c1/j1-0", "c1/j1", status=R, node="n1"), pod("c1/j1-1", "c1/j1"), pod("c1/j2-0", "c1/j2")]
    Case(
        "drf", nodes, groups, pods, [queue("c1")], conf("allocate", ["drf"]), binds={"c1/j2-0": "n1"}
    ).check()
    # without drf the older job wins
    Case(
        "fifo", nodes, groups, pods, [queue("c1")], conf("allocate", ["gang"]), binds={"c1/j1-1": "n1"}
    ).check()


def test_priority_orders_jobs_and_tasks() -> None:
    nodes = [node("n1", "1", "4Gi")]
    groups = [Group("c1/low", "c1", priority=1), Group("c1/high", "c1", priority=100)]
    pods = [pod("c1/low-0", "c1/low"), pod("c1/high-0", "c1/high")]
    Case(
        "job", nodes, groups, pods, [queue("c1")], conf("allocate", ["priority"]), binds={"c1/high-0": "n1"}
    ).check()
    pods = [pod("c1/j-0", "c1/low", priority=1), pod("c1/j-1", "c1/low", priority=5)]
    Case(
        "task", nodes, groups[:1], pods, [queue("c1")], conf("allocate", ["priority"]), binds={"c1/j-1": "n1"}
    ).check()


BUSY = [node("n1", "4", "8Gi"), node("n2", "4", "8Gi")]
BUSY_PODS = [pod("c1/old-0", "c1/old", "2", "4Gi", status=R, node="n2"), pod("c1/new-0", "c1/new")]
BUSY_GROUPS = [Group("c1/old", "c1", phase="Running"), Group("c1/new", "c1")]


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        (["predicates", "binpack"], "n2"),  # fill the busy node
        (["predicates", "nodeorder"], "n1"),  # least requested + balanced: the empty node
        (
            [
                "predicates",
                {
                    "name": "nodeorder",
                    "arguments": {
                        "leastrequested.weight": 0,
                        "mostrequested.weight": 1,
                        "balancedresource.weight": 0,
                    },
                },
            ],
            "n2",
        ),
        (["predicates", {"name": "binpack", "arguments": {"binpack.weight": 0}}], "n1"),  # weight 0 disables
        (
            [
                "predicates",
                {
                    "name": "resource-strategy-fit",
                    "arguments": {"resources": {"cpu": {"type": "MostAllocated", "weight": 1}}},
                },
            ],
            "n2",
        ),
        (["predicates", "resource-strategy-fit"], "n1"),  # default: LeastAllocated cpu and memory
    ],
)
def test_node_scoring_choice(plugins: list[Any], expected: str) -> None:
    case = Case(
        "score",
        BUSY,
        BUSY_GROUPS,
        BUSY_PODS,
        [queue("c1")],
        conf("allocate", plugins),
        binds={"c1/new-0": expected},
    )
    case.check()


def test_score_ties_go_to_the_lowest_node_name() -> None:
    nodes = [node("n3"), node("n1"), node("n2")]
    Case(
        "tie",
        nodes,
        [Group("c1/j", "c1")],
        [pod("c1/j-0", "c1/j")],
        [queue("c1")],
        conf("allocate", ["predicates", "nodeorder", "binpack"]),
        binds={"c1/j-0": "n1"},
    ).check()


def test_node_affinity_preference_is_scored() -> None:
    nodes = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"})]
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                }
            ]
        }
    }
    pods = [pod("c1/j-0", "c1/j", affinity=affinity)]
    Case(
        "pref",
        nodes,
        [Group("c1/j", "c1")],
        pods,
        [queue("c1")],
        conf("allocate", ["predicates", "nodeorder"]),
        binds={"c1/j-0": "n2"},
    ).check()


def _one(nodes: list[Any], **kw: Any) -> Case:
    return Case(
        "predicate",
        nodes,
        [Group("c1/j", "c1")],
        [pod("c1/j-0", "c1/j", **kw)],
        [queue("c1")],
        conf("allocate", ["predicates", "nodeorder"]),
    )


LABELLED = [node("n1", labels={"gpu": "a100", "gen": "3"}), node("n2", labels={"gpu": "h100", "gen": "4"})]


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"node_selector": {"gpu": "h100"}}, "n2"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "gpu", "operator": "NotIn", "values": ["h100"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            "n1",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]}
                            ]
                        }
                    }
                }
            },
            "n2",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]},
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                                    ]
                                },
                            ]
                        }
                    }
                }
            },
            "n1",
        ),
    ],
)
def test_node_selector_and_required_affinity(kw: dict[str, Any], expected: str) -> None:
    case = _one(LABELLED, **kw)
    case.binds = {"c1/j-0": expected}
    case.check()


def test_no_matching_node_reports_the_affinity_reason() -> None:
    result = _one(LABELLED, node_selector={"gpu": "v100"}).check()
    assert result.binds == {}
    assert "2 node(s) didn't match Pod's node affinity/selector" in result.reasons["c1/j"]


def test_taints_need_tolerations() -> None:
    nodes = [node("n1", taints=[Taint("dedicated", "ml", "NoSchedule")]), node("n2", "1", "1Gi")]
    big: dict[str, Any] = {"cpu": "2"}
    Case(
        "taint",
        nodes,
        [Group("c1/j", "c1")],
        [pod("c1/j-0", "c1/j", **big)],
        [queue("c1")],
        conf("allocate", ["predicates"]),
        binds={},
    ).check()
    tol = ({"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},)
    Case(
        "tolerated",
        nodes,
        [Group("c1/j", "c1")],
        [pod("c1/j-0", "c1/j", tolerations=tol, **big)],
        [queue("c1")],
        conf("allocate", ["predicates"]),
        binds={"c1/j-0": "n1"},
    ).check()


def test_unschedulable_nodes_pod_count_and_host_ports() -> None:
    nodes = [node("n1", unschedulable=True), node("n2", pods=1), node("n3")]
    groups = [Group("c1/old", "c1", phase="Running"), Group("c1/j", "c1")]
    pods = [
        pod("c1/old-0", "c1/old", status=R, node="n2"),
        pod("c1/old-1", "c1/old", status=R, node="n3", host_ports=(8080,)),
        pod("c1/j-0", "c1/j", host_ports=(8080,)),
    ]
    result = Case(
        "ports", nodes, groups, pods, [queue("c1")], conf("allocate", ["predicates"]), binds={}
    ).check()
    reason = result.reasons.get("c1/j", "")
    assert result.binds == {}
    pods[-1] = pod("c1/j-0", "c1/j", host_ports=(9090,))
    Case(
        "free port",
        nodes,
        groups,
        pods,
        [queue("c1")],
        conf("allocate", ["predicates"]),
        binds={"c1/j-0": "n3"},
    ).check()
    assert reason == "" or "0/3 nodes are available" in reason


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


def test_backfill_places_best_effort_pods() -> None:
    nodes = [node("n1", "1", "1Gi")]
    groups = [Group("c1/j", "c1", min_member=1)]
    pods = [pod("c1/j-0", "c1/j", "0", "0")]
    Case(
        "backfill",
        nodes,
        groups,
        pods,
        [queue("c1")],
        conf("allocate, backfill", ["gang"], ["predicates"]),
        binds={"c1/j-0": "n1"},
    ).check()


GPU_NODES = [node("cpu-1", "32", "64Gi"), node("gpu-1", "32", "64Gi", extra={"nvidia.com/gpu": "8"})]


def test_sra_keeps_gpu_nodes_for_gpu_pods() -> None:
    rsf = {
        "name": "resource-strategy-fit",
        "arguments": {
            "resources": {"nvidia.com/*": {"type": "MostAllocated", "weight": 2}},
            "sra": {
                "enable": True,
                "resources": "nvidia.com/gpu",
                "weight": 10,
                "resourceWeight": {"nvidia.com/gpu": 1},
            },
        },
    }
    cpu_pod = [pod("c1/j-0", "c1/j")]
    Case(
        "sra cpu",
        GPU_NODES,
        [Group("c1/j", "c1")],
        cpu_pod,
        [queue("c1")],
        conf("allocate", ["predicates", rsf]),
        binds={"c1/j-0": "cpu-1"},
    ).check()
    gpu_pod = [pod("c1/j-0", "c1/j", extra={"nvidia.com/gpu": "1"})]
    Case(
        "sra gpu",
        GPU_NODES,
        [Group("c1/j", "c1")],
        gpu_pod,
        [queue("c1")],
        conf("allocate", ["predicates", rsf]),
        binds={"c1/j-0": "gpu-1"},
    ).check()


def test_resource_strategy_wildcard_and_pod_override() -> None:
    from vglobal.scheduler.plugins.resource_strategy_fit import LEAST, MOST, lookup, parse_resources

    strategies = parse_resources(
        {
            "nvidia.com/*": {"type": "MostAllocated", "weight": 3},
            "nvidia.com/gpu-*": {"type": "LeastAllocated"},
            "*": {"type": "MostAllocated"},
            "cpu": {"type": "Bogus", "weight": -1},
        }
    )
    assert lookup(strategies, "nvidia.com/gpu-h100") == (LEAST, 1)  # longest prefix
    assert lookup(strategies, "nvidia.com/mig") == (MOST, 3)
    assert lookup(strategies, "memory") is None  # a bare * is dropped
    assert strategies["cpu"] == (LEAST, 1)
    nodes = BUSY
    override: dict[str, Any] = {
        "annotations": {
            "volcano.sh/resource-strategy-scoring-type": "MostAllocated",
            "volcano.sh/resource-strategy-weight": '{"cpu": 1}',
        }
    }
    pods = [BUSY_PODS[0], pod("c1/new-0", "c1/new", **override)]
    Case(
        "override",
        nodes,
        BUSY_GROUPS,
        pods,
        [queue("c1")],
        conf("allocate", ["predicates", "resource-strategy-fit"]),
        binds={"c1/new-0": "n2"},
    ).check()


NG_NODES = [
    node("n1", labels={"volcano.sh/nodegroup-name": "g1"}),
    node("n2", labels={"volcano.sh/nodegroup-name": "g2"}),
    node("n3"),
]


def _ng(affinity: dict[str, Any] | None, plugin: Any = "nodegroup", **qkw: Any) -> Case:
    queues = [queue("root"), queue("q", affinity=affinity, **qkw)]
    return Case(
        "ng",
        NG_NODES,
        [Group("c1/j", "q")],
        [pod("c1/j-0", "c1/j")],
        queues,
        conf("allocate", ["predicates", plugin, "nodeorder"]),
    )


@pytest.mark.parametrize(
    ("affinity", "plugin", "expected"),
    [
        (
            {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["g2"]}},
            "nodegroup",
            "n2",
        ),
        (
            {
                "nodeGroupAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": ["g1", "g2"],
                    "preferredDuringSchedulingIgnoredDuringExecution": ["g2"],
                }
            },
            "nodegroup",
            "n2",
        ),
        (
            {
                "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["g1", "g2"]},
                "nodeGroupAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["g1"]},
            },
            "nodegroup",
            "n2",
        ),
        (None, "nodegroup", None),  # strict: no affinity -> no node
        (None, {"name": "nodegroup", "arguments": {"strict": False}}, "n3"),  # only unlabelled nodes
    ],
)
def test_nodegroup(affinity: dict[str, Any] | None, plugin: Any, expected: str | None) -> None:
    case = _ng(affinity, plugin)
    case.binds = {"c1/j-0": expected} if expected else {}
    case.check()


def test_nodegroup_hierarchy_inherits_the_nearest_ancestor() -> None:
    aff = {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["g1"]}}
    queues = [queue("root"), queue("eng", affinity=aff), queue("q", parent="eng")]
    plugin: dict[str, Any] = {"name": "nodegroup", "enableHierarchy": True}
    Case(
        "inherit",
        NG_NODES,
        [Group("c1/j", "q")],
        [pod("c1/j-0", "c1/j")],
        queues,
        conf("allocate", ["predicates", plugin]),
        binds={"c1/j-0": "n1"},
    ).check()
    Case(
        "no inherit",
        NG_NODES,
        [Group("c1/j", "q")],
        [pod("c1/j-0", "c1/j")],
        queues,
        conf("allocate", ["predicates", "nodegroup"]),
        binds={},
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
