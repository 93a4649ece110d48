"""DRA on a member cluster: the agent reads ResourceSlices and DeviceClasses (resource.k8s.io/v1)
and reports each node's devices as ``deviceclass/<class>``, changes included; a pod claiming devices
is bound with its own ResourceClaim, allocated on its node."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.kube.harness import Agent, Cluster, dispatch, wait_for
from vglobal.model import dra

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


FIXTURE = Path(__file__).parents[1] / "fixtures" / "dra" / "job.yaml"


def test_a_pod_is_bound_with_its_claim_allocated_on_its_node(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    from kubernetes import client

    custom = client.CustomObjectsApi(cluster.api_client)
    custom.create_cluster_custom_object(
        GROUP, VERSION, "deviceclasses", _class("gpu.example.com", 'device.driver == "gpu.example.com"')
    )
    # node-1 has one device, node-2 two: the pod claiming two goes to node-2
    for node, n in (("node-1", 1), ("node-2", 2)):
        custom.create_cluster_custom_object(
            GROUP, VERSION, "resourceslices", _slice(f"{node}-gpu", node, "gpu.example.com", n)
        )
    agent = make_agent()
    docs, _ = dra.carry([d for d in yaml.safe_load_all(FIXTURE.read_text()) if d["kind"] != "Queue"])
    (job,) = docs
    job["metadata"]["namespace"] = ns
    job["spec"]["queue"] = "default"
    del job["spec"]["tasks"][0]["template"]["metadata"]["annotations"]  # runs until stopped
    agent.send(dispatch("uid-dra", 1, json.dumps(job)))
    agent.until(lambda: agent.run("uid-dra").phase == "Running", 20, "the job running")
    (pod,) = cluster.pods(ns, "volcano.sh/job-name=dra-train")
    assert pod.spec.node_name == "node-2"
    assert [(c.name, c.resource_claim_name) for c in pod.spec.resource_claims] == [
        ("gpus", "dra-train-worker-0-gpus")
    ]

    def allocation() -> Any:
        claim = custom.get_namespaced_custom_object(
            GROUP, VERSION, ns, "resourceclaims", "dra-train-worker-0-gpus"
        )
        return (claim.get("status") or {}).get("allocation")

    got = wait_for(allocation, 10, "the claim allocated")
    assert sorted(r["device"] for r in got["devices"]["results"]) == ["gpu-0", "gpu-1"]
    assert {r["pool"] for r in got["devices"]["results"]} == {"node-2"}
    term = got["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
    assert term["values"] == ["node-2"]
    # the agent now sees node-2's two devices held
    agent.until(
        lambda: agent.backend.free()["node-2"].get("deviceclass/gpu.example.com", 0) == 0, 10, "devices held"
    )


def test_a_controller_made_pods_claim_is_made_and_allocated_at_bind(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    import dataclasses

    from kubernetes import client

    from tests.kube.workload_kit import deployment, gang_job, template

    custom = client.CustomObjectsApi(cluster.api_client)
    custom.create_cluster_custom_object(
        GROUP, VERSION, "deviceclasses", _class("gpu.example.com", 'device.driver == "gpu.example.com"')
    )
    custom.create_cluster_custom_object(
        GROUP, VERSION, "resourceslices", _slice("node-1-gpu", "node-1", "gpu.example.com", 1)
    )
    agent = make_agent()
    tpl = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": ns},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}}]}
            }
        },
    }
    pod = template()
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    raw = deployment("serve", ns, replicas=1)
    raw["spec"]["template"] = pod
    job = gang_job(raw, [("main", 1, pod)])
    # as the hub reads it: the claim's device in the pod's request, the template with the job
    (task,) = job.tasks
    task = dataclasses.replace(task, pod_request=task.pod_request + {"deviceclass/gpu.example.com": 1000})
    job = dataclasses.replace(job, tasks=(task,), annotations={dra.CLAIMS_ANNOTATION: json.dumps([tpl])})
    agent.runtime.controller.start("uid-serve", 1, job, queue="default")

    def made() -> Any:
        pods = [p for p in cluster.live_pods(ns, "vglobal.io/job-uid=uid-serve") if p.spec.node_name]
        return pods[0] if pods else None

    bound = agent.until(made, 30, "the Deployment's pod bound")
    claim = f"{bound.metadata.name}-gpu"

    def allocation() -> Any:
        got = custom.get_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", claim)
        return (got.get("status") or {}).get("allocation") and got

    got = agent.until(allocation, 10, "the pod's claim allocated")
    assert [r["device"] for r in got["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
    assert got["metadata"]["ownerReferences"][0]["uid"] == bound.metadata.uid
    assert bound.spec.node_name == "node-1"
    statuses = cluster.core.read_namespaced_pod(bound.metadata.name, ns).status.resource_claim_statuses
    assert [(s.name, s.resource_claim_name) for s in statuses] == [("gpu", claim)]
