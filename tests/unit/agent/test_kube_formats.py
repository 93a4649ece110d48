"""The kube backend's pure pieces: records made from API objects, the vGPU device plugin's formats,
RBAC rules named from requests, the client-side token bucket."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.unit.devices.test_deviceshare import A100, gpu_node, task
from vglobal.agent.kube import vgpu
from vglobal.agent.kube.api import rbac_rule
from vglobal.agent.kube.ratelimit import TokenBucket
from vglobal.agent.kube.records import node_record, pod_record
from vglobal.agent.pods import PodPhase
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import Grant
from vglobal.scheduler.devices import GpuDevice, device_request, node_gpus
from vglobal.scheduler.devices.mig import DEFAULT_MIG, parse_mig_config
from vglobal.scheduler.devices.table import DeviceTable


def test_a_failed_pod_carries_its_first_container_s_exit_code_and_reason() -> None:
    pod = {
        "metadata": {
            "name": "j-w-0",
            "namespace": "ml",
            "uid": "u1",
            "labels": {"vglobal.io/job-uid": "J", "vglobal.io/generation": "3", "volcano.sh/task-spec": "w"},
            "annotations": {"vglobal.io/pod-uid": "J/3/j-w-0/1", "volcano.sh/job-version": "2"},
            "ownerReferences": [{"kind": "ConfigMap", "name": "j-vglobal", "uid": "o"}],
        },
        "spec": {
            "nodeName": "n1",
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "2"}}},
            ],
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {"name": "a", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
            ],
        },
    }
    rec = pod_record(pod)
    assert (rec.phase, rec.exit_code, rec.reason) == (PodPhase.Failed, 137, "OOMKilled")
    assert (rec.ours, rec.job_uid, rec.generation, rec.version, rec.owner, rec.task) == (
        "J/3/j-w-0/1",
        "J",
        3,
        2,
        "j-vglobal",
        "w",
    )
    # containers 1 + 2 cpu, but the init container's 4 is the peak
    assert rec.request == ResourceVector({"cpu": 4000, "memory": 2**30})
    assert not rec.holds_node  # finished: holds nothing
    evicted = pod_record(
        {**pod, "status": {"phase": "Failed", "reason": "Evicted", "message": "low on memory"}}
    )
    assert evicted.reason == "Evicted" and evicted.exit_code is None


def test_a_node_s_readiness_cordon_and_gpus() -> None:
    node = {
        "metadata": {
            "name": "g0",
            "labels": {
                "nvidia.com/gpu.product": "NVIDIA-L40S",
                "nvidia.com/gpu.memory": "46068",
                "nvidia.com/gpu.count": "4",
            },
        },
        "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoExecute"}]},
        "status": {
            "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    rec = node_record(node)
    assert rec.ready and rec.cordoned and rec.spec.unschedulable
    assert rec.spec.allocatable["nvidia.com/gpu"] == 4000 and rec.spec.allocatable["pods"] == 110
    assert [(g.index, g.memory_mib, g.model) for g in node_gpus(rec.spec)][:2] == [
        (0, 46068, "NVIDIA-L40S"),
        (1, 46068, "NVIDIA-L40S"),
    ]
    node["spec"] = {}
    node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]  # type: ignore[index]
    rec = node_record(node)
    assert not rec.ready and not rec.cordoned and rec.spec.unschedulable


def test_the_device_plugin_registration_is_read_as_volcano_reads_it() -> None:
    raw = "GPU-a,10,40960,NVIDIA-A100,true,hami-core:GPU-b,5,40960,NVIDIA-A100,true,mig:bad-entry:"
    alloc = {vgpu.VGPU_NUMBER: 15000, vgpu.VGPU_MEMORY: 81920000, vgpu.VGPU_CORES: 200000}
    devices, uuids = vgpu.registered_devices({vgpu.REGISTER_ANNOTATION: raw}, alloc)
    assert uuids == ("GPU-a", "GPU-b")
    assert [(d.split, d.mig) for d in devices] == [(10, False), (5, True)]
    # Volcano ignores the registration when the node advertises no vGPU resources
    assert vgpu.registered_devices({vgpu.REGISTER_ANNOTATION: raw}, {}) == ((), ())


def test_bind_annotations_list_each_requesting_container_s_devices() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "resources": {"limits": {"volcano.sh/vgpu-number": "2"}}},
                {"name": "side"},
                {"name": "b", "resources": {"limits": {"volcano.sh/vgpu-memory": "1024"}}},
            ]
        }
    }
    uses = [vgpu.DeviceUse(0, 2048, 25), vgpu.DeviceUse(1, 2048, 25), vgpu.DeviceUse(1, 1024, 0)]
    notes = vgpu.bind_annotations(pod, "n1", ("GPU-0", "GPU-1"), uses, 1_700_000_123.9)
    ids = "GPU-0,NVIDIA,2048,25:GPU-1,NVIDIA,2048,25:;GPU-1,NVIDIA,1024,0:"
    assert notes == {
        "volcano.sh/vgpu-node": "n1",
        "volcano.sh/vgpu-time": "1700000123",
        "volcano.sh/vgpu-ids-new": ids,
        "volcano.sh/devices-to-allocate": ids,
        "volcano.sh/bind-phase": "allocating",
        "volcano.sh/bind-time": "1700000123",
    }
    mig = vgpu.bind_annotations(pod, "n1", ("GPU-0",), [vgpu.DeviceUse(0, 10240, 0, "group1-0")], 1.0)
    assert mig["volcano.sh/vgpu-ids-new"].startswith("GPU-0[group1-0],NVIDIA,10240,0:")
    assert vgpu.bind_annotations(pod, "n1", ("GPU-0",), [], 1.0) == {}


def test_a_refused_request_names_the_rule_it_needs() -> None:
    assert rbac_rule("POST", "/api/v1/namespaces/ml/pods/p/binding") == (
        'apiGroups [""], resources [pods/binding], verbs [create] in namespace ml'
    )
    assert (
        rbac_rule("GET", "/api/v1/pods?watch=1&resourceVersion=5")
        == 'apiGroups [""], resources [pods], verbs [watch]'
    )
    assert rbac_rule("GET", "/apis/topology.volcano.sh/v1alpha1/hypernodes?limit=500") == (
        'apiGroups ["topology.volcano.sh"], resources [hypernodes], verbs [list]'
    )
    assert rbac_rule("PUT", "/apis/coordination.k8s.io/v1/namespaces/vglobal/leases/l") == (
        'apiGroups ["coordination.k8s.io"], resources [leases], verbs [update] in namespace vglobal'
    )


def test_the_token_bucket_lets_a_burst_through_then_paces() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    bucket = TokenBucket(10.0, 5, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        bucket.acquire()
    assert slept == []
    for _ in range(10):
        bucket.acquire()
    assert round(now[0], 6) == 1.0  # ten more at 10 per second
    assert TokenBucket(0, 1).unlimited


@pytest.mark.parametrize(
    ("case", "raw", "want"),
    [
        ("valid entry", "GPU-0,NVIDIA,4096,30:", [("GPU-0", None, 4096, 30)]),
        ("negative memory is skipped", "GPU-0,NVIDIA,-5,30:", []),
        ("negative cores is skipped", "GPU-0,NVIDIA,4096,-1:", []),
        ("non-numeric usage is skipped", "GPU-0,NVIDIA,abc,30:", []),
        ("entry with missing fields is skipped", "GPU-0,NVIDIA:", []),
        (
            "valid entry kept when mixed with invalid",
            "GPU-0,NVIDIA,-5,30:GPU-1,NVIDIA,2048,10:",
            [("GPU-1", None, 2048, 10)],
        ),
        # ours: containers split by ";" and a MIG instance's slot split off its GPU's UUID
        (
            "containers and a MIG slot",
            "GPU-0,NVIDIA,1,2:;GPU-1[group1-3],NVIDIA,5120,0:",
            [("GPU-0", None, 1, 2), ("GPU-1", "group1-3", 5120, 0)],
        ),
    ],
)
def test_decode_container_devices_rejects_invalid_usage(
    case: str, raw: str, want: list[tuple[str, str | None, int, int]]
) -> None:
    """utils_test.go TestDecodeContainerDevicesRejectsInvalidUsage."""
    got = [(d.uuid, d.mig_slot, d.memory_mib, d.cores) for d in vgpu.decode_devices(raw)]
    assert got == want, case


@pytest.mark.parametrize(
    ("case", "raw", "added"),
    [
        ("Pod assigned to known GPU UUID", "GPU-1234,NVIDIA,16384,0", True),
        ("Pod assigned to unknown GPU UUID", "GPU-5678,NVIDIA,16384,0", False),
        ("Pod without AssignedIDsAnnotations", "", False),
    ],
)
def test_add_resource(case: str, raw: str, added: bool) -> None:
    """device_info_test.go TestAddResource: a pod's devices are those of GPUs the node registers."""
    gpus = (GpuDevice(0, 16384, "NVIDIA", uuid="GPU-1234"),)
    got = vgpu.grants_of(raw, ("GPU-1234",), gpus, DEFAULT_MIG)
    assert (got == (Grant(0, 16384, 0),)) is added and (got == ()) is not added, case


def test_mig_ids_are_read_back_to_the_instance_they_name() -> None:
    """A MIG id "<uuid>[group<g>-<position>]" names geometry g and, by findPosition, the profile
    whose slots hold that position: the agent's own bind writes them so."""
    config = parse_mig_config(A100)  # geometry 1: 3 x 2g.10gb then 1 x 1g.5gb
    gpus = (GpuDevice(0, 40960, "A100-SXM4-40GB", True, uuid="GPU-0"),)
    table = DeviceTable(
        [replace(gpu_node("n0", 1, 40960, "A100-SXM4-40GB", True), extensions={"gpus": gpus})], config
    )
    written = []
    for mem in (8000, 8000, 4000):
        (grant,) = table.grants(device_request(task(f"p{mem}", mem=mem)), 0, "") or ()
        table.apply(0, [grant], +1)
        use = vgpu.DeviceUse(
            grant.device, grant.memory_mib, grant.cores, f"group{grant.geometry}-{grant.position}"
        )
        written.append((vgpu.bind_annotations({}, "n0", ("GPU-0",), [use], 1.0)[vgpu.IDS_ANNOTATION], grant))
    assert [raw.split(",")[0] for raw, _ in written] == [
        "GPU-0[group1-0]",
        "GPU-0[group1-1]",
        "GPU-0[group1-3]",
    ]
    for raw, grant in written:
        assert vgpu.grants_of(raw, ("GPU-0",), gpus, config) == (grant,)
    assert vgpu.grants_of("GPU-0[group9-0],NVIDIA,1,0:", ("GPU-0",), gpus, config) == ()
    # the first 2g.10gb given back: the next one takes its position again (getPosition takes the
    # first slot no pod holds), not one a live pod holds
    table.apply(0, [written[0][1]], -1)
    (again,) = table.grants(device_request(task("p", mem=8000)), 0, "") or ()
    assert (again.instance, again.position) == (written[0][1].instance, 0)
