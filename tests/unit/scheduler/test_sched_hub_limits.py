"""The hub's queue capability on every pod beyond a gang: under the agent's default conf (no
proportion, no capacity) as under those plugins, in exact integer units at any size."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import DEFAULT_AGENT_CONF, run_cycle
from vglobal.scheduler.conf import DEFAULT_AGENT_CONF_TEXT

GI = 1 << 30
PLUGINS: dict[str, str] = {
    "default": DEFAULT_AGENT_CONF_TEXT,
    "proportion": conf("enqueue, allocate", ["priority", "gang"], ["predicates", "proportion"]),
    "capacity": conf("enqueue, allocate", ["priority", "gang"], ["predicates", "capacity"]),
}


def cpu(n: int) -> ResourceVector:
    return ResourceVector({"cpu": n * 1000})


def elastic(n: int, min_available: int, queue_name: str = "q", **pod_kw: Any) -> tuple[Group, list[Any]]:
    group = Group("c1/j", queue_name, min_member=min_available, phase="Pending")
    return group, [pod(f"c1/j-{i}", "c1/j", **pod_kw) for i in range(n)]


@pytest.mark.parametrize("plugins", sorted(PLUGINS))
def test_fifty_pods_of_two_cpu_in_a_fifty_cpu_queue_run_twenty_five(plugins: str) -> None:
    group, pods = elastic(50, 20, cpu="2")
    nodes = [node(f"n{i}", "64", "512Gi") for i in range(3)]
    q = queue("q", capability=cpu(50), federated=True)
    result = Case("fifty", nodes, [group], pods, [q], PLUGINS[plugins]).check()
    assert len(result.binds) == 25


def test_without_the_hub_figures_the_default_conf_places_every_pod() -> None:
    """A queue whose capability the hub did not send (an older hub; a sim case's own queue) is
    Volcano's: the default conf has no quota plugin."""
    group, pods = elastic(50, 20, cpu="2")
    nodes = [node(f"n{i}", "64", "512Gi") for i in range(3)]
    q = queue("q", capability=cpu(50))
    result = Case("volcano", nodes, [group], pods, [q], PLUGINS["default"]).check()
    assert len(result.binds) == 50


def test_the_gang_is_placed_even_past_the_room_left() -> None:
    """The hub admitted the gang: the check is on the pods beyond it only."""
    group, pods = elastic(10, 6, cpu="2")
    q = queue("q", capability=cpu(8), federated=True)
    result = Case("gang", [node("n", "64", "64Gi")], [group], pods, [q], PLUGINS["default"]).check()
    assert len(result.binds) == 6


@pytest.mark.parametrize("plugins", sorted(PLUGINS))
def test_pods_beyond_a_gang_leave_the_room_of_another_admitted_gang(plugins: str) -> None:
    """The hub admitted both gangs into a 3-cpu queue in one cycle (1 + 2 cpu). The first job in
    job order has a pod beyond its gang: placed first, it would take the room of the second gang,
    which is placed anyway (the hub admitted it): 4 cpu in a 3-cpu queue."""
    groups = [
        Group("c1/high", "q", min_member=1, phase="Pending", priority=100),
        Group("c1/low", "q", min_member=2, phase="Pending", priority=1),
    ]
    pods = [pod(f"c1/high-{i}", "c1/high", cpu="1", priority=100) for i in range(2)]
    pods += [pod(f"c1/low-{i}", "c1/low", cpu="1", priority=1) for i in range(2)]
    q = queue("q", capability=cpu(3), federated=True)
    result = Case("two", [node("n", "8", "64Gi")], groups, pods, [q], PLUGINS[plugins]).check()
    assert sorted(result.binds) == ["c1/high-0", "c1/low-0", "c1/low-1"]


@pytest.mark.parametrize("plugins", ["default"])
def test_pods_beyond_a_finished_gang_take_its_room_again(plugins: str) -> None:
    """The gang's pods finished, two beyond it wait: the hub still charges the job its gang (2 cpu)
    and gives no allowance (they fit in it), so the capability here is that. They go into the
    gang's room (once counted 2 + 1 > 2 each: the job ran on for ever)."""
    group = Group("c1/j", "q", min_member=2, phase="Running")
    pods = [pod(f"c1/j-{i}", "c1/j", cpu="1", status="Succeeded", node="n") for i in range(2)]
    pods += [pod(f"c1/j-{i}", "c1/j", cpu="1") for i in range(2, 5)]
    q = queue("q", capability=cpu(2), federated=True)
    result = Case("finished", [node("n", "8", "64Gi")], [group], pods, [q], PLUGINS[plugins]).check()
    assert sorted(result.binds) == ["c1/j-2", "c1/j-3"]


def test_the_chain_counts_every_queue_and_what_runs_in_its_children() -> None:
    nodes = [node("n", "64", "512Gi")]
    groups = [
        Group("c1/a", "a", min_member=1, phase="Pending"),
        Group("c1/b", "b", min_member=1, phase="Running"),
    ]
    pods = [pod(f"c1/a-{i}", "c1/a", cpu="2") for i in range(20)]
    pods += [pod(f"c1/b-{i}", "c1/b", cpu="2", status="Running", node="n") for i in range(5)]  # 10 cpu
    queues = [
        queue("eng", capability=cpu(30), federated=True),
        queue("a", parent="eng", capability=cpu(100), federated=True),
        queue("b", parent="eng", federated=True),
    ]
    result = Case("chain", nodes, groups, pods, queues, PLUGINS["default"]).check()
    assert len(result.binds) == 10  # eng: 10 held by b, 20 left: a places 10 pods of 2 cpu


@pytest.mark.parametrize("size", [16, 256, 1024], ids=["16Gi", "256Gi", "1Ti"])
@pytest.mark.parametrize("plugins", sorted(PLUGINS))
def test_exact_memory_fit(plugins: str, size: int) -> None:
    """Three pods fit a capability of exactly three pods' memory; one byte less holds two."""
    mem = size * GI
    nodes = [node(f"n{i}", "64", f"{size * 2}Gi") for i in range(4)]
    for room, placed in ((3 * mem, 3), (3 * mem - 1, 2)):
        group, pods = elastic(5, 1, cpu="1", memory=f"{size}Gi")
        q = queue("q", capability=ResourceVector({"memory": room}), federated=True)
        result = Case(f"{size}Gi", nodes, [group], pods, [q], PLUGINS[plugins]).check()
        assert len(result.binds) == placed, (room, dict(result.binds))


def test_default_conf_is_the_agents() -> None:
    group, pods = elastic(4, 1, cpu="1")
    q = queue("q", capability=cpu(2), federated=True)
    from tests.unit.scheduler.sched_table import build_state

    result = run_cycle(build_state([node("n", "8", "8Gi")], [group], pods, [q]), DEFAULT_AGENT_CONF)
    assert len(result.binds) == 2


@pytest.mark.parametrize("size", [16, 256, 1024, 1 << 20], ids=["16Gi", "256Gi", "1Ti", "1Pi"])
@pytest.mark.parametrize("queues", [3, 7])
def test_water_filled_shares_fit_exactly(queues: int, size: int) -> None:
    """n queues of weight 1 share n nodes' memory: each deserves exactly one node's worth and
    places its first pod of that size (floats lost a byte of the share at 1Pi: none was placed)."""
    nodes = [node(f"n{i}", "64", f"{size}Gi") for i in range(queues)]
    groups = [Group(f"c1/j{q}", f"q{q}", min_member=1, phase="Inqueue") for q in range(queues)]
    pods = [
        pod(f"c1/j{q}-{i}", f"c1/j{q}", cpu="1", memory=f"{size}Gi") for q in range(queues) for i in range(2)
    ]
    result = Case(
        "water", nodes, groups, pods, [queue(f"q{q}") for q in range(queues)], PLUGINS["proportion"]
    ).check()
    assert sorted(result.binds) == sorted(f"c1/j{q}-0" for q in range(queues))
