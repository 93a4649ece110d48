"""Plugins: job/task order and node scoring choices (after Volcano's plugin tests)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
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


def test_prefer_no_schedule_taints_lower_the_score() -> None:
    nodes = [node("n1", taints=[Taint("spot", "true", "PreferNoSchedule")]), node("n2")]
    groups, queues = [Group("c1/j", "c1")], [queue("c1")]
    plugins = conf("allocate", ["predicates", "nodeorder"])
    Case(
        "soft taint", nodes, groups, [pod("c1/j-0", "c1/j")], queues, plugins, binds={"c1/j-0": "n2"}
    ).check()
    tolerant = [pod("c1/j-0", "c1/j", tolerations=({"key": "spot", "operator": "Exists"},))]
    Case("tolerated", nodes, groups, tolerant, queues, plugins, binds={"c1/j-0": "n1"}).check()
