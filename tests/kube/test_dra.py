"""DRA on a member cluster: the agent reads ResourceSlices and DeviceClasses (resource.k8s.io/v1)
and reports each node's devices as ``deviceclass/<class>``, changes included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.kube.harness import Agent, Cluster

GROUP, VERSION = "resource.k8s.io", "v1"


def _class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _slice(name: str, node: str, driver: str, devices: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
        },
    }


def test_resource_slices_are_node_devices_by_device_class(
    make_agent: Callable[..., Agent], cluster: Cluster, emulator: Any
) -> None:
    from kubernetes import client

    custom = client.CustomObjectsApi(cluster.api_client)

    def create(plural: str, body: dict[str, Any]) -> None:
        custom.create_cluster_custom_object(GROUP, VERSION, plural, body)

    create("deviceclasses", _class("gpu.example.com", 'device.driver == "gpu.example.com"'))
    # a selector other than the driver's name is not read: its devices are not counted
    create("deviceclasses", _class("big.example.com", 'device.attributes["x"].memory > 1'))
    create("resourceslices", _slice("node-0-gpu", "node-0", "gpu.example.com", 2))
    create("resourceslices", _slice("node-1-gpu", "node-1", "gpu.example.com", 1))
    agent = make_agent()

    def devices() -> dict[str, int]:
        nodes = agent.backend.nodes()
        return {n.name: n.allocatable.get("deviceclass/gpu.example.com", 0) for n in nodes}

    assert devices() == {"node-0": 2000, "node-1": 1000, "node-2": 0, "node-3": 0}
    assert not any("deviceclass/big.example.com" in n.allocatable for n in agent.backend.nodes())
    assert agent.backend.free()["node-0"]["deviceclass/gpu.example.com"] == 2000
    create("resourceslices", _slice("node-2-gpu", "node-2", "gpu.example.com", 4))
    agent.until(lambda: devices()["node-2"] == 4000, 10, "the new ResourceSlice counted")
    custom.delete_cluster_custom_object(GROUP, VERSION, "resourceslices", "node-0-gpu")
    agent.until(lambda: devices()["node-0"] == 0, 10, "the deleted ResourceSlice gone")
