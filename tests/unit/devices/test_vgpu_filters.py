"""The pod-level card filters of Volcano's vGPU predicate, at the agent (DeviceTable, the real
scheduler) and at the hub (NodeCards, admission) alike: the GPU UUID lists
(``volcano.sh/vgpu-use-gpuuuid`` / ``-nouse-gpuuuid``) and the PodGroup spread policy
(``volcano.sh/vgpu-podgroup-policy: spread``).

Cases port Volcano's pkg/scheduler/api/devices/nvidia/vgpu/utils_test.go (TestCheckGPUUUID,
TestGPUUUIDConstraints, TestDeviceHasPodFromSameGroup) and spread_integration_test.go. Volcano keys
a pod's group by its PodGroup annotation; every pod of a Volcano Job carries its job's one PodGroup,
so both sides here key it by the job's uid (TestGetPodGroupKey has nothing to port).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.unit.admission.builders import admitted, reason
from tests.unit.admission.builders import job as pending_job
from tests.unit.admission.test_admission_cards import cluster, mig_card, snap, vgpu
from tests.unit.devices.test_deviceshare import conf, task
from vglobal.admission import admit
from vglobal.agent.cards import node_cards
from vglobal.model.cards import CardUse, NodeCards
from vglobal.model.gpu_fit import NOUSE_UUID_ANNOTATION, USE_UUID_ANNOTATION, request_of
from vglobal.model.resources import ResourceVector
from vglobal.scheduler import ClusterSnapshot, JobSpec, NodeSpec, QueueSpec, TaskSpec, parse_conf, run_cycle
from vglobal.scheduler.api import Grant
from vglobal.scheduler.devices import GPUS_EXTENSION, GpuDevice, device_request, vgpu_capacity
from vglobal.scheduler.devices.mig import DEFAULT_MIG
from vglobal.scheduler.devices.table import DeviceTable

SPREAD = {"volcano.sh/vgpu-podgroup-policy": "spread"}


def uuid_node(name: str = "node-1", gpus: int = 2, memory: int = 16384, split: int = 4) -> NodeSpec:
    """makeGPUDevices: GPUs GPU-0000A, GPU-0000B, ... of ``memory`` MiB, ``split`` pods each."""
    devices = tuple(
        GpuDevice(i, memory, "NVIDIA", split=split, uuid=f"GPU-0000{chr(65 + i)}") for i in range(gpus)
    )
    alloc = ResourceVector.from_quantities({"cpu": "32", "memory": "128Gi", "pods": 110})
    return NodeSpec(name, alloc + vgpu_capacity(devices), extensions={GPUS_EXTENSION: devices})


def worker(uid: str, group: str, ann: dict[str, str] | None = None, node: str | None = None) -> TaskSpec:
    """makeVGPUPod: one vGPU of 4096 MiB and 25 cores, in PodGroup ``group``."""
    return replace(task(uid, node=node, ann=ann, mem=4096, cores=25), job_uid=group)


@pytest.mark.parametrize(
    ("case", "annotations", "uuid", "ok"),
    [
        ("no constraint", {}, "GPU-0", True),
        ("empty allowlist is ignored", {USE_UUID_ANNOTATION: "  "}, "GPU-0", True),
        ("separator-only allowlist is ignored", {USE_UUID_ANNOTATION: ", ,"}, "GPU-0", True),
        ("allowlist exact match", {USE_UUID_ANNOTATION: "GPU-0, GPU-1"}, "GPU-1", True),
        ("allowlist ignores empty entries", {USE_UUID_ANNOTATION: "GPU-0,, GPU-1,"}, "GPU-1", True),
        ("allowlist rejects partial match", {USE_UUID_ANNOTATION: "GPU-10"}, "GPU-1", False),
        ("allowlist rejects empty device UUID", {USE_UUID_ANNOTATION: "GPU-0,"}, "", False),
        ("denylist rejects match", {NOUSE_UUID_ANNOTATION: "GPU-0, GPU-1"}, "GPU-1", False),
        ("denylist constraint rejects empty device UUID", {NOUSE_UUID_ANNOTATION: "GPU-0,"}, "", False),
        (
            "denylist wins over allowlist",
            {USE_UUID_ANNOTATION: "GPU-1", NOUSE_UUID_ANNOTATION: "GPU-1"},
            "GPU-1",
            False,
        ),
    ],
)
def test_check_gpu_uuid(case: str, annotations: dict[str, str], uuid: str, ok: bool) -> None:
    """TestCheckGPUUUID."""
    req = request_of(ResourceVector.from_quantities({"volcano.sh/vgpu-number": 1}), annotations)
    assert req.uuid_ok(uuid) is ok, case


@pytest.mark.parametrize(
    ("case", "annotations", "want"),
    [
        ("allowlist selects requested GPU", {USE_UUID_ANNOTATION: "GPU-0000A"}, "GPU-0000A"),
        ("denylist excludes GPU", {NOUSE_UUID_ANNOTATION: "GPU-0000B"}, "GPU-0000A"),
        ("unknown allowed UUID is unschedulable", {USE_UUID_ANNOTATION: "GPU-unknown"}, USE_UUID_ANNOTATION),
        (
            "denylist excludes all GPUs",
            {NOUSE_UUID_ANNOTATION: "GPU-0000A,GPU-0000B"},
            NOUSE_UUID_ANNOTATION,
        ),
    ],
)
def test_gpu_uuid_constraints(case: str, annotations: dict[str, str], want: str) -> None:
    """TestGPUUUIDConstraints: the agent grants the card the lists allow, the hub picks the same
    one from the agent's report; where none is allowed the hub's reason names the annotation."""
    node = uuid_node()
    req = device_request(worker("uid", "g", annotations))
    grants = DeviceTable([node], DEFAULT_MIG).grants(req, 0, "")
    hub = NodeCards.of(node_cards([node], {})["node-1"])
    picked = hub.fits(req).tolist()
    if want.startswith("GPU-"):
        assert grants is not None and [g.device for g in grants] == picked == [ord(want[-1]) - 65], case
        return
    assert grants is None and picked == [], case
    assert want in hub_reason(node, 1, annotations), case


def hub_reason(node: NodeSpec, pods: int, hints: dict[str, str]) -> str:
    """Why the hub keeps a job of ``pods`` vGPUs of 4096 MiB waiting ("" if it admits it)."""
    c1 = cluster("c1", {node.name: tuple(node_cards([node], {})[node.name])})
    result = admit(snap(c1, pending=(pending_job("j", "q", vgpu(4096), pods, gpu_hints=(hints,)),)))
    return "" if admitted(result) == {"j": "c1"} else reason(result, "j")


def test_device_has_pod_from_same_group() -> None:
    """TestDeviceHasPodFromSameGroup: a card counts a group while one of its pods uses memory or
    cores there ("same group but zero usage (released)" does not)."""
    node = uuid_node(gpus=1)
    table = DeviceTable([node], DEFAULT_MIG)
    req = device_request(worker("b", "ns/my-pg", SPREAD))
    table.apply(0, [Grant(0, 1000, 0)], +1, "ns/other")
    assert table.grants(req, 0, "", "ns/my-pg") is not None  # no pod from same group
    table.apply(0, [Grant(0, 0, 0)], +1, "ns/my-pg")
    assert table.grants(req, 0, "", "ns/my-pg") is not None  # same group but zero usage
    table.apply(0, [Grant(0, 1000, 50)], +1, "ns/my-pg")
    assert table.grants(req, 0, "", "ns/my-pg") is None  # same group with non-zero usage
    assert table.grants(req, 0, "", "") is not None  # empty currentKey
    table.apply(0, [Grant(0, 1000, 50)], -1, "ns/my-pg")
    assert table.grants(req, 0, "", "ns/my-pg") is not None  # given back
    # the hub's copy: taken by the group, then given back by it (a victim's cards)
    hub = NodeCards.of(node_cards([node], {})["node-1"])
    taken = hub.take(req, "ns/my-pg")
    assert taken is not None and taken.fits(req, "ns/my-pg").size == 0 and taken.fits(req, "x").size == 1
    back = taken.apply([CardUse(0, 4096, 25)], -1, "ns/my-pg")
    assert back.fits(req, "ns/my-pg").tolist() == [0]


def _allocate(table: DeviceTable, hub: NodeCards, pod: TaskSpec) -> tuple[int | None, NodeCards]:
    """simulateAllocate (binpack) at the agent's table, and the hub's copy taking the same pod:
    both must pick the same card (None: the pod does not fit)."""
    req = device_request(pod)
    grants = table.grants(req, 0, "binpack", pod.job_uid)
    taken = hub.take(req, pod.job_uid)
    assert (grants is None) == (taken is None)
    if grants is None or taken is None:
        return None, hub
    table.apply(0, grants, +1, pod.job_uid)
    assert taken.cards.used_num.tolist() == table.used_num[0, : len(taken.models)].tolist()
    return grants[0].device, taken


def _run(gpus: int, *pods: TaskSpec) -> list[int | None]:
    node = uuid_node(gpus=gpus)
    table = DeviceTable([node], DEFAULT_MIG)
    hub = NodeCards.of(node_cards([node], {}, policy="binpack")["node-1"])
    out = []
    for pod in pods:
        card, hub = _allocate(table, hub, pod)
        out.append(card)
    return out


def test_spread_prevents_co_location() -> None:
    """TestSpreadPreventsCoLocation: two pods of one PodGroup with spread go to different cards."""
    a, b = _run(2, worker("aaa", "job-1", SPREAD), worker("bbb", "job-1", SPREAD))
    assert a is not None and b is not None and a != b


def test_binpack_allows_co_location() -> None:
    """TestBinpackAllowsCoLocation: without spread binpack stacks them on one card."""
    a, b = _run(2, worker("aaa", "job-1"), worker("bbb", "job-1"))
    assert a is not None and a == b


def test_spread_different_groups_can_share() -> None:
    """TestSpreadDifferentGroupsCanShare: spread keeps apart pods of one group only."""
    assert _run(1, worker("aaa", "job-1", SPREAD), worker("bbb", "job-2", SPREAD)) == [0, 0]


def test_spread_with_no_room_fails() -> None:
    """TestSpreadWithNoRoomFails: one card, already used by the group: the second pod does not fit."""
    assert _run(1, worker("aaa", "job-1", SPREAD), worker("bbb", "job-1", SPREAD)) == [0, None]


def test_mixed_annotations() -> None:
    """TestMixedAnnotations: a pod of the group without the annotation may share the card."""
    assert _run(1, worker("aaa", "job-1", SPREAD), worker("bbb", "job-1")) == [0, 0]


def _gang(uid: str, pods: int, ann: dict[str, str]) -> JobSpec:
    tasks = tuple(replace(worker(f"{uid}-{i}", uid, ann), name=f"{uid}-t-{i}", index=i) for i in range(pods))
    return JobSpec(uid, uid, "default", "default", 0, pods, {"t": pods}, 0, tasks, podgroup_phase="Inqueue")


@pytest.mark.parametrize(("gpus", "ann", "fits"), [(1, SPREAD, False), (2, SPREAD, True), (1, {}, True)])
def test_spread_gang_through_the_scheduler_and_the_hub(gpus: int, ann: dict[str, str], fits: bool) -> None:
    """A gang of two spread pods needs two cards, at the agent's scheduler and at the hub alike."""
    node = uuid_node(gpus=gpus)
    state = ClusterSnapshot((node,), (_gang("j", 2, ann),), (QueueSpec("default"),))
    result = run_cycle(state, parse_conf(conf("binpack", 1)))
    assert (len(result.binds) == 2) is fits
    if fits:
        assert len({g.device for gs in result.devices.values() for g in gs}) == (2 if ann else 1)
    why = hub_reason(node, 2, ann)
    assert (why == "") is fits, why
    assert fits or "vgpu-podgroup-policy spread" in why


@pytest.mark.parametrize(("mode", "fits"), [(None, True), ("mig", True), ("hami-core", False), ("", False)])
def test_vgpu_mode_at_the_hub_on_a_cluster_of_mig_cards(mode: str | None, fits: bool) -> None:
    """checkNodeGPUSharingPredicateAndScore at the hub: on a node in MIG mode a pod naming no mode
    gets an instance, one naming another mode waits, saying which mode no node has."""
    hints = {} if mode is None else {"volcano.sh/vgpu-mode": mode}
    cut = cluster("cut", {"n0": (mig_card(),)})
    result = admit(snap(cut, pending=(pending_job("j", "q", vgpu(4000), gpu_hints=(hints,)),)))
    if fits:
        assert admitted(result) == {"j": "cut"}
    else:
        assert f"no node in cluster cut with room for the gang is in vgpu-mode {mode!r}" in reason(
            result, "j"
        )
