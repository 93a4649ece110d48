"""The nodes and HyperNodes an emulated cluster starts with: N identical nodes, or the node groups
and HyperNodes of a SimCluster file (clusters/*.yaml), with GPU Feature Discovery labels on GPU nodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.kubeapi.clock import rfc3339
from tests.kubeapi.ctl_autoscaler import POOL_LABEL, EmulatedPool
from vglobal.agent.backends.sim_cluster import SimCluster, SimNode, parse_sim_cluster

DEFAULT_ALLOCATABLE = {"cpu": "32", "memory": "128Gi", "pods": "110"}
GFD_PRODUCT, GFD_MEMORY, GFD_COUNT = "nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.count"
VGPU_REGISTER = "volcano.sh/node-vgpu-register"
VGPU_SPLIT = 10  # the device plugin's default --device-split-count


def node_manifest(
    name: str,
    allocatable: Mapping[str, str] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    index: int = 0,
    ready: bool = True,
) -> dict[str, Any]:
    """A Node as a kubelet registers it: capacity = allocatable, Ready, an InternalIP."""
    alloc = dict(allocatable or DEFAULT_ALLOCATABLE)
    now = rfc3339()
    ip = f"10.0.{index // 250 % 250}.{index % 250 + 1}"
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **(labels or {}),
            },
        },
        "spec": {"podCIDR": f"10.244.{index % 250}.0/24"},
        "status": {
            "capacity": alloc,
            "allocatable": alloc,
            "conditions": [
                {
                    "type": t,
                    "status": "False",
                    "reason": f"KubeletHas{r}",
                    "message": m,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
                for t, r, m in (
                    ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
                    ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
                    ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
                )
            ]
            + [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if ready else "container runtime is down",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kernelVersion": "6.1.0",
                "kubeProxyVersion": "v1.33.0",
                "kubeletVersion": "v1.33.0",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 12",
                "systemUUID": "",
            },
        },
    }
    if taints:
        node["spec"]["taints"] = [dict(t) for t in taints]
    return node


def simple_nodes(
    count: int,
    allocatable: Mapping[str, str] | None = None,
    *,
    prefix: str = "node",
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    return [node_manifest(f"{prefix}-{i}", allocatable, labels=labels, index=i) for i in range(count)]


def vgpu_registration(node: str, count: int, memory_mib: int, model: str, mig: bool) -> str:
    """What the Volcano vGPU device plugin writes on its node (volcano-vgpu-device-plugin's
    EncodeNodeDevices): per GPU ``UUID,splitCount,memoryMiB,NVIDIA-<model>,healthy,mode:``."""
    mode = "mig" if mig else "hami-core"
    return "".join(
        f"GPU-{node}-{i},{VGPU_SPLIT},{memory_mib},NVIDIA-{model or 'GPU'},true,{mode}:" for i in range(count)
    )


def _sim_node(n: SimNode, index: int) -> dict[str, Any]:
    labels = dict(n.labels)
    allocatable = n.allocatable.to_quantities()
    annotations = {}
    if n.gpus is not None and n.gpus.count > 0:
        if n.gpus.model:
            labels.setdefault(GFD_PRODUCT, n.gpus.model)
        if n.gpus.memory_mib:
            labels.setdefault(GFD_MEMORY, str(n.gpus.memory_mib))
            # the vGPU device plugin runs on GPU nodes whose memory the cluster file gives, as the
            # sim assumes: its registration and the vgpu-* resources it advertises
            annotations[VGPU_REGISTER] = vgpu_registration(
                n.name, n.gpus.count, n.gpus.memory_mib, n.gpus.model, n.gpus.mig
            )
            allocatable.setdefault("volcano.sh/vgpu-number", str(n.gpus.count * VGPU_SPLIT))
            allocatable.setdefault("volcano.sh/vgpu-memory", str(n.gpus.count * n.gpus.memory_mib))
            allocatable.setdefault("volcano.sh/vgpu-cores", str(n.gpus.count * 100))
        labels.setdefault(GFD_COUNT, str(n.gpus.count))
    node = node_manifest(n.name, allocatable, labels=labels, taints=n.taints, index=index)
    if annotations:
        node["metadata"]["annotations"] = annotations
    return node


def from_sim_cluster(cluster: SimCluster) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(nodes, HyperNode objects) of a simulated cluster, the HyperNodes as the CRs it lists; the
    nodes of a group with ``autoscale`` carry its name as their pool (``vglobal.io/node-pool``)."""
    nodes = [_sim_node(n, i) for i, n in enumerate(cluster.nodes)]
    for node in nodes:
        name = node["metadata"]["name"]
        pool = next((p.name for p in cluster.pools if name.startswith(f"{p.name}-")), None)
        if pool is not None:
            node["metadata"]["labels"][POOL_LABEL] = pool
    return nodes, [_hypernode(h) for h in cluster.hyper_nodes]


def sim_pools(cluster: SimCluster) -> list[EmulatedPool]:
    """The autoscaled node groups of a simulated cluster, for the emulated autoscaler."""
    out = []
    for i, p in enumerate(cluster.pools):
        node = _sim_node(p.node, 200 + i)
        node["metadata"]["labels"][POOL_LABEL] = p.name
        out.append(EmulatedPool(p.name, node, p.max, p.provision_seconds))
    return out


def _hypernode(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A full HyperNode object from either form a SimCluster accepts (full manifest or {name, tier, members})."""
    if "spec" in doc or "metadata" in doc:
        body = dict(doc)
    else:
        body = {"metadata": {"name": doc.get("name")}, "spec": {k: v for k, v in doc.items() if k != "name"}}
    return {**body, "apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode"}


def load_sim_cluster(path: str | Path) -> SimCluster:
    return parse_sim_cluster(yaml.safe_load(Path(path).read_text()))
