"""Scheduling gates as the API server keeps them, and the emulated autoscaler: a ProvisioningRequest
brings the nodes its pods need after the pool's delay (or fails when the pool cannot hold them);
gated pods that do not fit today's nodes bring nodes too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.kubeapi import EmulatorConfig, KubeApiEmulator
from tests.kubeapi.cluster import node_manifest
from tests.kubeapi.ctl_autoscaler import POOL_LABEL, EmulatedPool
from tests.kubeapi.testkit import binding, pod_body, wait_until

GPU = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}
GROUP = ("autoscaling.x-k8s.io", "v1beta1")


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[KubeApiEmulator]:
    node = node_manifest("gpu-0", GPU, labels={POOL_LABEL: "gpu"})
    pool = EmulatedPool("gpu", node_manifest("gpu-new", GPU, labels={POOL_LABEL: "gpu"}), max=3, delay=0.3)
    with KubeApiEmulator(EmulatorConfig(nodes=[node], pools=[pool]), tmp_path / "kubeconfig") as e:
        yield e


def _gpu_pod(name: str, gated: bool = False) -> dict[str, Any]:
    body = pod_body(name)
    body["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "8"}}
    if gated:
        body["spec"]["schedulingGates"] = [{"name": "vglobal.io/provisioning"}]
    return body


def _nodes(core: client.CoreV1Api) -> list[str]:
    return sorted(n.metadata.name for n in core.list_node().items)


def test_a_gated_pod_is_not_bound_gates_are_only_removed_and_gated_pods_grow_the_pool(
    emu: KubeApiEmulator,
) -> None:
    core = client.CoreV1Api(emu.api_client())
    for i in range(3):
        core.create_namespaced_pod("default", _gpu_pod(f"w-{i}", gated=True))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_binding("w-0", "default", binding("w-0", "gpu-0"), _preload_content=False)
    assert refused.value.status == 409 and "non-empty .spec.schedulingGates" in refused.value.body
    with pytest.raises(ApiException) as added:
        core.patch_namespaced_pod(
            "w-0", "default", {"spec": {"schedulingGates": [{"name": "a"}, {"name": "b"}]}}
        )
    assert added.value.status == 422 and "only deletion is allowed" in added.value.body
    # one pod fits gpu-0: two nodes come, after the pool's delay
    nodes = wait_until(lambda: (n := _nodes(core)) != ["gpu-0"] and n, 10, what="nodes added")
    assert nodes == ["gpu-0", "gpu-1", "gpu-2"], nodes
    assert core.read_node("gpu-2").metadata.labels[POOL_LABEL] == "gpu"
    core.patch_namespaced_pod("w-0", "default", {"spec": {"schedulingGates": None}})
    core.create_namespaced_pod_binding("w-0", "default", binding("w-0", "gpu-0"), _preload_content=False)
    assert core.read_namespaced_pod("w-0", "default").spec.node_name == "gpu-0"


def _conditions(custom: client.CustomObjectsApi, name: str) -> dict[str, str]:
    pr = custom.get_namespaced_custom_object(*GROUP, "default", "provisioningrequests", name)
    return {c["type"]: c["status"] for c in (pr.get("status") or {}).get("conditions") or []}


def _request(custom: client.CustomObjectsApi, core: client.CoreV1Api, name: str, count: int) -> None:
    tmpl = {"metadata": {"name": name}, "template": {"spec": _gpu_pod("x")["spec"]}}
    core.create_namespaced_pod_template("default", tmpl)
    body = {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": name},
        "spec": {
            "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "podSets": [{"count": count, "podTemplateRef": {"name": name}}],
        },
    }
    custom.create_namespaced_custom_object(*GROUP, "default", "provisioningrequests", body)


def test_a_provisioning_request_is_provisioned_once_its_nodes_are_up_or_fails_past_the_max(
    emu: KubeApiEmulator,
) -> None:
    api = emu.api_client()
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    _request(custom, core, "big", 4)  # 1 node + 3 new > max 3
    assert wait_until(lambda: _conditions(custom, "big"), 10) == {"Failed": "True"}
    _request(custom, core, "fits", 2)
    done = wait_until(lambda: "Provisioned" in (c := _conditions(custom, "fits")) and c, 10)
    assert done == {"Accepted": "True", "Provisioned": "True"}
    assert _nodes(core) == ["gpu-0", "gpu-1"]  # gpu-0 holds one of the two pods
