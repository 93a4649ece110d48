"""The kube backend's pure pieces: records made from API objects, the vGPU device plugin's formats,
RBAC rules named from requests, the client-side token bucket."""

from __future__ import annotations

from vglobal.agent.kube import vgpu
from vglobal.agent.kube.api import rbac_rule
from vglobal.agent.kube.ratelimit import TokenBucket
from vglobal.agent.kube.records import node_record, pod_record
from vglobal.agent.pods import PodPhase
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.devices import node_gpus


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
