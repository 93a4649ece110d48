"""What the agent knows of the cluster: nodes as the API lists them (GPUs from GFD labels and the vGPU
device plugin's registration, taints, cordons, readiness), every other pod's hold on them, and
HyperNodes from the CRD or from node labels."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.kube.harness import Agent, Cluster, dispatch, job_yaml, wait_for
from tests.kubeapi import EmulatorConfig, KubeApiEmulator, node_manifest
from tests.kubeapi.testkit import pod_body
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.devices import node_gpus


def test_every_node_is_known_with_its_allocatable_labels_and_taints(
    make_agent: Callable[..., Agent], cluster: Cluster
) -> None:
    agent = make_agent()
    listed = {n.metadata.name: n for n in cluster.core.list_node().items}
    nodes = {n.name: n for n in agent.backend.nodes()}
    assert nodes.keys() == listed.keys()
    for name, n in listed.items():
        assert nodes[name].allocatable == ResourceVector.from_quantities(n.status.allocatable)
        assert nodes[name].allocatable["pods"] > 0
        assert dict(nodes[name].labels) == n.metadata.labels
        assert {t.key for t in nodes[name].taints} == {t.key for t in n.spec.taints or []}


def _gpu_cluster(tmp_path: Path) -> KubeApiEmulator:
    register = "".join(
        f"GPU-aaaa-{i},10,40960,NVIDIA-NVIDIA A100-PCIE-40GB,{'true' if i < 3 else 'false'},hami-core:"
        for i in range(4)
    )
    vgpu = node_manifest(
        "vgpu-0",
        {
            "cpu": "32",
            "memory": "256Gi",
            "pods": "110",
            "volcano.sh/vgpu-number": "40",
            "volcano.sh/vgpu-memory": "163840",
            "volcano.sh/vgpu-cores": "400",
        },
    )
    vgpu["metadata"]["annotations"] = {"volcano.sh/node-vgpu-register": register}
    gfd = node_manifest(
        "h100-0",
        {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
        labels={
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.memory": "81920",
            "nvidia.com/gpu.count": "8",
        },
        taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        index=1,
    )
    cordoned = node_manifest("cpu-0", {"cpu": "8", "memory": "32Gi", "pods": "110"}, index=2)
    cordoned["spec"]["unschedulable"] = True
    sick = node_manifest("cpu-1", {"cpu": "8", "memory": "32Gi", "pods": "110"}, index=3, ready=False)
    emu = KubeApiEmulator(EmulatorConfig(nodes=[vgpu, gfd, cordoned, sick]), tmp_path / "gpu-kubeconfig")
    return emu.start()


def test_gpus_vgpu_registration_cordons_and_readiness(tmp_path: Path) -> None:
    emu = _gpu_cluster(tmp_path)
    assert emu.kubeconfig is not None
    agent = Agent(emu.kubeconfig)
    try:
        nodes = {n.name: n for n in agent.backend.nodes()}
        vgpus = node_gpus(nodes["vgpu-0"])
        # the unhealthy fourth GPU is left out; each registered GPU is split 10 ways
        assert [(g.index, g.memory_mib, g.split) for g in vgpus] == [
            (0, 40960, 10),
            (1, 40960, 10),
            (2, 40960, 10),
        ]
        assert agent.backend.cache.uuids("vgpu-0") == ("GPU-aaaa-0", "GPU-aaaa-1", "GPU-aaaa-2")
        h100 = node_gpus(nodes["h100-0"])
        assert len(h100) == 8 and h100[0].memory_mib == 81920 and h100[0].model == "NVIDIA-H100-80GB-HBM3"
        assert [t.key for t in nodes["h100-0"].taints] == ["nvidia.com/gpu"]
        assert nodes["cpu-0"].unschedulable and nodes["cpu-1"].unschedulable
        assert not nodes["vgpu-0"].unschedulable
        version = agent.backend.inventory_version()
        emu.set_node_ready("vgpu-0", False)
        agent.until(lambda: agent.backend.inventory_version() != version, 10, "the node change seen")
        assert {n.name: n for n in agent.backend.nodes()}["vgpu-0"].unschedulable
    finally:
        agent.stop()
        emu.stop()


def test_every_unfinished_pod_holds_its_node_whoever_made_it(
    make_agent: Callable[..., Agent], cluster: Cluster, ns: str, emulator: Any
) -> None:
    agent = make_agent()
    before = agent.backend.free()["node-1"]
    foreign = pod_body("daemon", node="node-1", scheduler="default-scheduler")
    foreign["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3", "memory": "1Gi"}}
    cluster.core.create_namespaced_pod(ns, foreign)
    used = ResourceVector({"cpu": 3000, "memory": 2**30, "pods": 1})
    agent.until(lambda: agent.backend.free()["node-1"] == before - used, 10, "the foreign pod counted")
    assert agent.backend.reserved()["node-1"] == used
    # a 6-cpu pod no longer fits node-1 (8 cpu, 3 held): three of them go to the other nodes
    agent.send(dispatch("uid-six", 1, job_yaml("six", ns, replicas=3, cpu="6", duration=None)))
    agent.until(lambda: agent.run("uid-six").phase == "Running", 20, "the gang running")
    placed = {p.spec.node_name for p in cluster.pods(ns, "volcano.sh/job-name=six")}
    assert placed == {"node-0", "node-2", "node-3"}
    # a finished pod holds nothing
    done = pod_body("batch", node="node-2", duration="0s", scheduler="default-scheduler")
    done["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    cluster.core.create_namespaced_pod(ns, done)
    wait_for(
        lambda: cluster.core.read_namespaced_pod("batch", ns).status.phase == "Succeeded", 10, "batch done"
    )
    agent.until(
        lambda: "node-2" not in agent.backend.reserved() or agent.backend.reserved()["node-2"]["cpu"] == 0,
        10,
        "released",
    )


HYPERNODES = [
    {
        "metadata": {"name": "tor-a"},
        "spec": {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[01]$"}}}],
        },
    },
    {
        "metadata": {"name": "tor-b"},
        "spec": {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[23]$"}}}],
        },
    },
    {
        "metadata": {"name": "spine"},
        "spec": {
            "tier": 2,
            "members": [
                {"type": "HyperNode", "selector": {"exactMatch": {"name": "tor-a"}}},
                {"type": "HyperNode", "selector": {"exactMatch": {"name": "tor-b"}}},
            ],
        },
    },
]


def test_hypernode_objects_are_watched_and_changes_reported(
    make_agent: Callable[..., Agent], cluster: Cluster, emulator: Any
) -> None:
    from kubernetes import client

    custom = client.CustomObjectsApi(cluster.api_client)
    for hn in HYPERNODES:
        custom.create_cluster_custom_object(
            "topology.volcano.sh",
            "v1alpha1",
            "hypernodes",
            {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", **hn},
        )
    agent = make_agent()
    tree = {h.name: h for h in agent.backend.hyper_nodes()}
    assert tree["tor-a"].nodes == {"node-0", "node-1"} and tree["spine"].children == ("tor-a", "tor-b")
    seen = len(agent.out)
    custom.delete_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes", "spine")

    def registered_again() -> list[Any]:
        return [m.register for m in agent.out[seen:] if m.WhichOneof("body") == "register"]

    (register,) = agent.until(registered_again, 10, "a new Register with the changed tree")
    assert {h.name for h in register.hypernodes} == {"tor-a", "tor-b"}
    assert {h.name for h in agent.backend.hyper_nodes()} == {"tor-a", "tor-b"}


def test_without_the_crd_hypernodes_come_from_label_discovery(
    make_agent: Callable[..., Agent], cluster: Cluster, emulator: Any
) -> None:
    emulator.set_hypernode_crd(False)
    for i, node in enumerate(["node-0", "node-1", "node-2", "node-3"]):
        cluster.core.patch_node(node, {"metadata": {"labels": {"example.com/tor": f"t{i // 2}"}}})
    discovery = {
        "networkTopologyTypes": {
            "tor": [{"nodeLabel": "example.com/tor"}, {"nodeLabel": "kubernetes.io/hostname"}]
        }
    }
    agent = make_agent(discovery=discovery)
    tree = {h.name: h.nodes for h in agent.backend.hyper_nodes()}
    assert sorted(map(sorted, tree.values())) == [["node-0", "node-1"], ["node-2", "node-3"]]
    assert all(h.tier == 1 for h in agent.backend.hyper_nodes())
    assert emulator.counts().get("list hypernodes", 0) == 0


def test_vgpu_pods_are_bound_with_the_device_annotations_volcano_writes(tmp_path: Path) -> None:
    emu = _gpu_cluster(tmp_path)
    assert emu.kubeconfig is not None
    agent = Agent(emu.kubeconfig)
    reader = Cluster(emu.kubeconfig)
    try:
        limits = '\n            limits: {"volcano.sh/vgpu-number": "2", "volcano.sh/vgpu-memory": "4096", "volcano.sh/vgpu-cores": "30"}'
        manifest = job_yaml("share", "default", replicas=1, duration=None, resources=limits)
        agent.send(dispatch("uid-share", 1, manifest))
        agent.until(lambda: agent.run("uid-share").phase == "Running", 20, "the vGPU pod running")
        (pod,) = reader.pods("default", "volcano.sh/job-name=share")
        notes = pod.metadata.annotations
        assert pod.spec.node_name == "vgpu-0" == notes["volcano.sh/vgpu-node"]
        ids = notes["volcano.sh/vgpu-ids-new"]
        devices = [d.split(",") for d in ids.split(":") if d]
        assert len(devices) == 2 and ids.endswith(":") and ";" not in ids
        for uuid, kind, mem, cores in devices:
            assert uuid in {"GPU-aaaa-0", "GPU-aaaa-1", "GPU-aaaa-2"} and kind == "NVIDIA"
            assert (mem, cores) == ("4096", "30")
        assert len({d[0] for d in devices}) == 2  # two different GPUs
        assert notes["volcano.sh/devices-to-allocate"] == ids
        assert notes["volcano.sh/bind-phase"] == "allocating"
        assert int(notes["volcano.sh/vgpu-time"]) == int(notes["volcano.sh/bind-time"]) > 1_700_000_000
    finally:
        reader.close()
        agent.stop()
        emu.stop()
