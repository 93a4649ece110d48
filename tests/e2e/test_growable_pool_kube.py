"""A Kubernetes cluster that grows, through a hub and a kube agent on the emulated API server and its
emulated autoscaler: a gang bigger than today's nodes is admitted there, the agent asks the cluster
for the nodes (a ProvisioningRequest where the API serves them, else its pods held by a scheduling
gate), the autoscaler adds them after its delay and the gang runs; a gang whose nodes never come
is handed back after --bind-timeout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import System, wait_for
from tests.kubeapi import EmulatorProcess, api_client

pytestmark = pytest.mark.e2e

CLOUD = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: cloud}
spec:
  nodeGroups:
  - name: gpu
    count: 1
    allocatable: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
    autoscale: {max: 3, provisionDelay: 2s}
"""
POOLS = """
pools:
- name: gpu
  max: MAX
  provisionDelay: 2s
  allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
"""
GANG = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: NAME, annotations: {vglobal.io/clusters: CLUSTER}}
spec:
  minAvailable: 3
  tasks:
  - name: w
    replicas: 3
    template:
      spec: {containers: [{name: w, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}]}
"""


def _emulator(tmp: Path, name: str, *args: str) -> EmulatorProcess:
    (path := tmp / f"{name}.yaml").write_text(CLOUD.replace("name: cloud", f"name: {name}"))
    return EmulatorProcess(tmp / f"{name}.kubeconfig", "--name", name, "--cluster", str(path), *args)


def _agent(system: System, tmp: Path, emu: EmulatorProcess, name: str, pool_max: int) -> None:
    (pools := tmp / f"{name}-pools.yaml").write_text(POOLS.replace("MAX", str(pool_max)))
    system.start_kube_agent(
        name, emu.kubeconfig, "--lease-duration", "0", "--node-pools", str(pools), "--bind-timeout", "8s"
    )


def _apply(system: System, tmp: Path, name: str, cluster: str) -> None:
    (path := tmp / f"job-{name}.yaml").write_text(GANG.replace("NAME", name).replace("CLUSTER", cluster))
    system.cli("apply", "-f", str(path))


def _custom(kubeconfig: Path, plural: str) -> list[Any]:
    from kubernetes import client

    api = api_client(kubeconfig)
    try:
        got = client.CustomObjectsApi(api).list_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1beta1", "default", plural
        )
    finally:
        api.close()
    return list(got["items"])


def _pods(kubeconfig: Path, job: str) -> list[Any]:
    from kubernetes import client

    api = api_client(kubeconfig)
    try:
        return list(
            client.CoreV1Api(api)
            .list_namespaced_pod("default", label_selector=f"volcano.sh/job-name={job}")
            .items
        )
    finally:
        api.close()


def _running(system: System, name: str) -> dict[str, Any]:
    return wait_for(
        lambda: (j := system.job(name)) and j["phase"] == "Running" and j, 60, f"{name} to run", system
    )


def test_gangs_grow_pools_by_provisioning_request_or_gated_pods_and_one_whose_nodes_never_come_goes_back(
    system: System, tmp_path: Path
) -> None:
    # cloud serves ProvisioningRequests; edge does not: its pods wait behind the scheduling gate, and
    # its agent believes the pool reaches 6 nodes where the cluster's autoscaler stops at 3
    cloud = _emulator(tmp_path, "cloud")
    edge = _emulator(tmp_path, "edge", "--no-provisioning-requests")
    try:
        system.start_hub()
        _agent(system, tmp_path, cloud, "cloud", 3)
        _agent(system, tmp_path, edge, "edge", 6)
        wait_for(lambda: len(system.get_json("clusters")) == 2, 60, "both registered", system)
        with system.client() as c:
            (pool,) = c.get_cluster("cloud").pools  # from the --node-pools file and the labelled node
        assert (pool.name, pool.current, pool.max, pool.provision_seconds) == ("gpu", 1, 3, 2.0)
        _apply(system, tmp_path, "pretrain", "cloud")
        _apply(system, tmp_path, "first", "edge")
        assert _running(system, "pretrain")["cluster"] == "cloud"
        (request,) = _custom(cloud.kubeconfig, "provisioningrequests")
        assert request["spec"]["provisioningClassName"] == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
        assert [s["count"] for s in request["spec"]["podSets"]] == [3]  # the gang's waiting pods, one task
        conditions = {c["type"]: c["status"] for c in request["status"]["conditions"]}
        assert conditions == {"Accepted": "True", "Provisioned": "True"}, conditions
        nodes = sorted(p.spec.node_name for p in _pods(cloud.kubeconfig, "pretrain"))
        assert nodes == ["gpu-0", "gpu-1", "gpu-2"], nodes
        with system.client() as c:
            grown = c.get_cluster("cloud")
        assert grown.nodes == 3 and [(p.current, p.max) for p in grown.pools] == [(3, 3)]
        hub = [e.message for e in c_events(system, "pretrain") if e.reason == "Provisioning"]
        assert hub == ["its gang needs 2 nodes of node pool gpu that cluster cloud can add"], hub

        assert _running(system, "first")["cluster"] == "edge"
        placed = _pods(edge.kubeconfig, "first")
        assert sorted(p.spec.node_name for p in placed) == ["gpu-0", "gpu-1", "gpu-2"]
        assert all(not p.spec.scheduling_gates for p in placed)  # lifted before each bind
        assert _custom_served(edge.kubeconfig) is False
        _apply(system, tmp_path, "second", "edge")
        rejected = wait_for(
            lambda: [e.message for e in c_events(system, "second") if e.reason == "Rejected"],
            60,
            "second handed back",
            system,
        )
        assert rejected[0].startswith("gang did not fit within 8s"), rejected
    finally:
        cloud.stop()
        edge.stop()


def c_events(system: System, job: str) -> list[Any]:
    with system.client() as c:
        return list(c.explain_job(job).events)


def _custom_served(kubeconfig: Path) -> bool:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = api_client(kubeconfig)
    try:
        client.CustomObjectsApi(api).list_namespaced_custom_object(
            "autoscaling.x-k8s.io", "v1beta1", "default", "provisioningrequests"
        )
        return True
    except ApiException as exc:
        assert exc.status == 404
        return False
    finally:
        api.close()
