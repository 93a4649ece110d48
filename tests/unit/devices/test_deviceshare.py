"""deviceshare: per-device vGPU fit, binpack / spread scores, dynamic MIG best fit, GPU models,
whole nvidia.com/gpu next to shared GPUs. Sessions run through the real scheduler."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest

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
from vglobal.scheduler.devices import GPUS_EXTENSION, GpuDevice, device_request, gpus_from_spec, vgpu_capacity
from vglobal.scheduler.devices.mig import DEFAULT_MIG, MigState, mig_choice, parse_mig_config
from vglobal.scheduler.devices.table import DeviceTable


def gpu_node(
    name: str, count: int = 2, memory: int = 16384, model: str = "T4", mig: bool = False
) -> NodeSpec:
    devices = tuple(GpuDevice(i, memory, model, mig) for i in range(count))
    alloc = ResourceVector.from_quantities(
        {"cpu": "32", "memory": "128Gi", "pods": 110, "nvidia.com/gpu": count}
    )
    return NodeSpec(name, alloc + vgpu_capacity(devices), extensions={GPUS_EXTENSION: devices})


def task(uid: str, node: str | None = None, ann: Mapping[str, str] | None = None, **res: int) -> TaskSpec:
    quantities: dict[str, str | int] = {"cpu": "1", "memory": "1Gi"}
    for key, value in res.items():
        quantities[
            {
                "number": "volcano.sh/vgpu-number",
                "mem": "volcano.sh/vgpu-memory",
                "cores": "volcano.sh/vgpu-cores",
                "gpu": "nvidia.com/gpu",
            }[key]
        ] = value
    return TaskSpec(
        uid=uid,
        name=f"{uid}-t-0",
        job_uid=uid,
        role="t",
        index=0,
        request=ResourceVector.from_quantities(quantities),
        status=TaskStatus.Running if node else TaskStatus.Pending,
        node=node,
        annotations=dict(ann or {}),
    )


def job(t: TaskSpec, creation: int = 0) -> JobSpec:
    return JobSpec(
        t.job_uid, t.job_uid, "default", "default", 0, 1, {"t": 1}, creation, (t,), podgroup_phase="Inqueue"
    )


def conf(policy: str = "binpack", weight: int = 10, extra: str = "") -> str:
    return f"""
actions: "allocate"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}]
- plugins:
  - name: predicates
  - name: deviceshare
    arguments: {{deviceshare.SchedulePolicy: {policy}, deviceshare.ScheduleWeight: {weight}{extra}}}
"""


def schedule(nodes: Sequence[NodeSpec], tasks: Sequence[TaskSpec], text: str | None = None) -> dict[str, str]:
    state = ClusterSnapshot(
        tuple(nodes), tuple(job(t, i) for i, t in enumerate(tasks)), (QueueSpec("default"),)
    )
    return dict(run_cycle(state, parse_conf(text or conf())).binds)


@pytest.mark.parametrize(
    ("used", "req", "fits"),
    [
        ([], {"mem": 16384}, True),  # a whole card's memory
        ([], {"mem": 16385}, False),
        ([{"mem": 8000}], {"mem": 8384}, True),
        ([{"mem": 8000}], {"mem": 8385}, False),
        ([{"mem": 1000, "cores": 60}], {"mem": 1000, "cores": 40}, True),
        ([{"mem": 1000, "cores": 60}], {"mem": 1000, "cores": 41}, False),  # UsedCore + cores <= 100
        ([{"mem": 1000, "cores": 10}], {"mem": 1000, "cores": 100}, False),  # 100 cores need an unshared GPU
        ([{"mem": 1000, "cores": 100}], {"mem": 1000}, False),  # all cores used, request without cores
        ([{"mem": 100}] * 10, {"mem": 100}, False),  # split count 10 reached
        ([{"mem": 100}] * 9, {"mem": 100}, True),
        ([], {"number": 1}, True),  # no memory: the whole card
        ([{"mem": 100}], {"number": 1}, False),
        ([{"gpu": 1}], {"mem": 10}, False),  # a whole-GPU task holds the device
    ],
)
def test_vgpu_fit_on_one_device(used: list[dict[str, int]], req: dict[str, int], fits: bool) -> None:
    node = gpu_node("n0", count=1)
    running = [task(f"r{i:02d}", node="n0", **u) for i, u in enumerate(used)]
    binds = schedule([node], [*running, task("new", **req)])
    assert ("new" in binds) == fits


def _table(nodes: Sequence[NodeSpec], placed: Sequence[tuple[int, dict[str, int]]] = ()) -> DeviceTable:
    table = DeviceTable(nodes, DEFAULT_MIG)
    for i, (row, req) in enumerate(placed):
        grants = table.grants(device_request(task(f"p{i}", **req)), row, "binpack")
        assert grants
        table.apply(row, grants, +1)
    return table


def test_binpack_and_spread_scores_per_node() -> None:
    """n0 already has 8000 MiB used on one GPU, n1 is empty; the new pod asks 4096 MiB."""
    nodes = [gpu_node("n0", count=1), gpu_node("n1", count=1)]
    running = [task("r", node="n0", mem=8000)]
    assert schedule(nodes, [*running, task("new", mem=4096)], conf("binpack")) == {"new": "n0"}
    # Volcano's spread scores 0 everywhere (UsedNum is never 0 after adding the pod) and the tie
    # would go to n0; ours sends the pod to the emptier GPU.
    assert schedule(nodes, [*running, task("new", mem=4096)], conf("spread")) == {"new": "n1"}
    # weight 0 (Volcano's default) scores nothing: the lowest name wins
    assert schedule(nodes, [task("r", node="n1", mem=8000), task("new", mem=4096)], conf("binpack", 0)) == {
        "new": "n0"
    }


def test_device_choice_within_a_node() -> None:
    nodes = [gpu_node("n0", count=3)]
    table = _table(nodes, [(0, {"mem": 2000}), (0, {"mem": 2000})])
    # binpack stacked both on one device (most used memory first)
    assert table.used_num[0].tolist() == [0, 0, 2] or table.used_num[0].tolist() == [2, 0, 0]
    spread = table.chosen(device_request(task("x", mem=1000)), np.array([0]), "spread")[0].tolist()
    assert table.used_num[0, spread[0]] == 0


def test_multi_vgpu_request_needs_that_many_devices() -> None:
    nodes = [gpu_node("a", count=1), gpu_node("b", count=2)]
    assert schedule(nodes, [task("two", number=2, mem=1000)]) == {"two": "b"}


def test_whole_gpu_requests_take_only_untouched_devices() -> None:
    nodes = [gpu_node("n0", count=2)]
    running = [task("shared", node="n0", mem=1000)]
    assert schedule(nodes, [*running, task("one", gpu=1)]) == {"one": "n0"}
    assert schedule(nodes, [*running, task("two", gpu=2)]) == {}


def test_gpu_model_constraints() -> None:
    nodes = [gpu_node("a", model="T4"), gpu_node("b", model="V100M32")]
    assert schedule(nodes, [task("v", ann={"nvidia.com/use-gputype": "V100"}, mem=1000)]) == {"v": "b"}
    assert schedule(nodes, [task("w", ann={"nvidia.com/use-gputype": "P100|V100M32"}, gpu=1)]) == {"w": "b"}
    assert schedule(nodes, [task("n", ann={"nvidia.com/nouse-gputype": "T4"}, mem=1000)]) == {"n": "b"}
    assert schedule(nodes, [task("x", ann={"nvidia.com/use-gputype": "A100"}, mem=1000)]) == {}


A100 = [
    {
        "models": ["A100-SXM4-40GB"],
        "allowedGeometries": [
            [{"name": "1g.5gb", "memory": 5120, "count": 7}],
            [
                {"name": "2g.10gb", "memory": 10240, "count": 3},
                {"name": "1g.5gb", "memory": 5120, "count": 1},
            ],
            [{"name": "3g.20gb", "memory": 20480, "count": 2}],
            [{"name": "7g.40gb", "memory": 40960, "count": 1}],
        ],
    }
]


@pytest.mark.parametrize(
    ("used", "geometry", "memory", "expected"),
    [
        ({}, None, 4000, (0, "1g.5gb")),  # first geometry that fits
        ({}, None, 6000, (1, "2g.10gb")),
        ({}, None, 15000, (2, "3g.20gb")),
        ({}, None, 40960, (3, "7g.40gb")),
        ({"2g.10gb": 1}, 1, 4000, (1, "1g.5gb")),  # best fit inside the geometry in force
        ({"2g.10gb": 1, "1g.5gb": 1}, 1, 4000, (1, "2g.10gb")),  # smallest with a free slot
        ({"1g.5gb": 7}, 0, 1000, None),  # geometry full
        ({"1g.5gb": 1}, 0, 6000, None),  # in-force geometry has no big enough instance
    ],
)
def test_mig_best_fit_instance(
    used: dict[str, int], geometry: int | None, memory: int, expected: tuple[int, str] | None
) -> None:
    config = parse_mig_config(A100)
    groups = config.geometries("A100-SXM4-40GB", 40960)
    got = mig_choice(MigState(geometry, dict(used)), groups, memory)
    assert (None if got is None else (got[0], got[1].name)) == expected


def test_mig_pods_through_the_scheduler_keep_the_geometry() -> None:
    nodes = [gpu_node("n0", count=1, memory=40960, model="A100-SXM4-40GB", mig=True)]
    mig = {"volcano.sh/vgpu-mode": "mig"}
    args = ", deviceshare.KnownMigGeometries: " + str(A100).replace("'", '"')
    text = conf("binpack", 1, args)
    running = [task("a", node="n0", ann=mig, mem=8000)]  # takes a 2g.10gb: geometry 1 in force
    fits = schedule(nodes, [*running, task("b", ann=mig, mem=9000), task("c", ann=mig, mem=9000)], text)
    assert fits == {"b": "n0", "c": "n0"}  # the other two 2g.10gb slots
    full = [*running, task("b", node="n0", ann=mig, mem=9000), task("c", node="n0", ann=mig, mem=9000)]
    assert schedule(nodes, [*full, task("d", ann=mig, mem=6000)], text) == {}  # only a 1g.5gb is left
    assert schedule(nodes, [*full, task("e", ann=mig, mem=5000)], text) == {"e": "n0"}
    # the node is in MIG mode: a pod naming hami-core does not fit it, a pod naming no mode gets an
    # instance of the geometry in force (checkNodeGPUSharingPredicateAndScore, the node's Sharing)
    hami = {"volcano.sh/vgpu-mode": "hami-core"}
    assert schedule(nodes, [*running, task("h", ann=hami, mem=1000)], text) == {}
    assert schedule(nodes, [*full, task("h", mem=1000)], text) == {"h": "n0"}
    assert schedule(nodes, [*full, task("h", mem=6000)], text) == {}  # only a 1g.5gb is left


def test_vgpu_number_from_node_capacity_without_a_device_list() -> None:
    alloc = ResourceVector.from_quantities(
        {
            "cpu": "8",
            "memory": "32Gi",
            "volcano.sh/vgpu-number": 20,
            "volcano.sh/vgpu-memory": 32768,
            "nvidia.com/gpu": 2,
        }
    )
    node = NodeSpec("cap", alloc)
    assert schedule([node], [task("a", mem=16384), task("b", mem=16384)]) == {"a": "cap", "b": "cap"}
    assert schedule([node], [task("a", mem=16385)]) == {}


def test_gpus_from_spec_counts() -> None:
    devices = gpus_from_spec(4, 81920, "H100", True)
    assert [d.index for d in devices] == [0, 1, 2, 3] and all(
        d.mig and d.memory_mib == 81920 for d in devices
    )
    assert vgpu_capacity(devices)["volcano.sh/vgpu-number"] == 40_000


def test_a_task_on_a_node_holds_the_devices_it_was_bound_with() -> None:
    """Volcano's AddResource: a placed pod's devices are those its annotation records, not what the
    rule would give it now (by default the highest free card first, here card 1)."""
    from dataclasses import replace

    from vglobal.scheduler.api import Grant

    node = gpu_node("n0", count=2)
    recorded = replace(task("a", node="n0", mem=10000), devices=(Grant(0, 10000, 0),))
    for running, card in ((task("a", node="n0", mem=10000), 0), (recorded, 1)):  # policy "": by index
        state = ClusterSnapshot(
            (node,), (job(running, 0), job(task("b", mem=10000), 1)), (QueueSpec("default"),)
        )
        result = run_cycle(state, parse_conf(conf("")))
        assert [g.device for g in result.devices["b"]] == [card]
    # a recorded device the node no longer has: the rule gives the task its devices
    gone = replace(recorded, devices=(Grant(5, 10000, 0),))
    state = ClusterSnapshot((node,), (job(gone, 0), job(task("b", mem=10000), 1)), (QueueSpec("default"),))
    assert [g.device for g in run_cycle(state, parse_conf(conf(""))).devices["b"]] == [0]
