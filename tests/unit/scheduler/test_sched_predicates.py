"""predicates and nodegroup: which nodes a pod may use (after Volcano's plugin tests)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.scheduler import Taint, TaskStatus

R = TaskStatus.Running


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
    # every pod asks for one "pods" slot, so the full node fails the resource check first
    assert result.reasons["c1/j"] == (
        "0/3 nodes are available: 1 Insufficient pods, "
        "1 node(s) didn't have free ports for the requested pod ports, 1 node(s) were unschedulable."
    )
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


@pytest.mark.parametrize(
    "plugin",
    [
        {"name": "nodegroup", "enableHierarchy": True},
        # as Volcano 1.13's release notes write it: under arguments, honoured the same
        {"name": "nodegroup", "arguments": {"enableHierarchy": True, "strict": False}},
    ],
)
def test_nodegroup_enable_hierarchy_beside_the_name_or_under_arguments(plugin: dict[str, Any]) -> None:
    aff = {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["g2"]}}
    queues = [queue("root"), queue("eng", affinity=aff), queue("q", parent="eng")]
    Case(
        "inherit",
        NG_NODES,
        [Group("c1/j", "q")],
        [pod("c1/j-0", "c1/j")],
        queues,
        conf("allocate", ["predicates", plugin]),
        binds={"c1/j-0": "n2"},
    ).check()


def test_enable_hierarchy_in_both_places_must_agree() -> None:
    from vglobal.scheduler import parse_conf

    plugin = {"name": "capacity", "enableHierarchy": True, "arguments": {"enableHierarchy": "false"}}
    with pytest.raises(ValueError, match=r"tiers\[0\].plugins\[0\].arguments.enableHierarchy: contradicts"):
        parse_conf(conf("allocate", [plugin]))
    with pytest.raises(ValueError, match=r"arguments.enableHierarchy: expected true or false"):
        parse_conf(conf("allocate", [{"name": "capacity", "arguments": {"enableHierarchy": "yes"}}]))
    got = parse_conf(conf("allocate", [{"name": "capacity", "arguments": {"enableHierarchy": True}}]))
    assert (
        got.tiers[0][0].flags == {"enableHierarchy": True}
        and "enableHierarchy" not in got.tiers[0][0].arguments
    )
