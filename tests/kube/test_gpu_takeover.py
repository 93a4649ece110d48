"""An agent that takes over a cluster reads back the GPUs its pods hold from the device annotations
the bind wrote (``volcano.sh/vgpu-ids-new``, as Volcano's AddResource does), so its pods go on
naming their cards to the hub (which gives them back when it plans to evict them) and its nodes'
card tables stay as they were. Real HTTP to the Kubernetes API emulator, one vGPU node in
hami-core mode and one in MIG mode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kube.harness import Agent, Cluster, dispatch, job_yaml
from tests.kubeapi import EmulatorConfig, KubeApiEmulator
from tests.kubeapi.cluster import node_manifest
from vglobal.agent.cards import node_cards
from vglobal.api.v1 import agent_pb2 as pb

GPU_NODE = {
    "cpu": "32",
    "memory": "256Gi",
    "pods": "110",
    "volcano.sh/vgpu-number": "30",
    "volcano.sh/vgpu-memory": "122880",
    "volcano.sh/vgpu-cores": "300",
}


def _gpu_node(name: str, mode: str, index: int) -> dict[str, object]:
    node = node_manifest(name, GPU_NODE, index=index)
    register = "".join(f"GPU-{name}-{i},10,40960,NVIDIA-A100-SXM4-40GB,true,{mode}:" for i in range(3))
    node["metadata"]["annotations"] = {"volcano.sh/node-vgpu-register": register}
    return node


@pytest.fixture
def gpu_kubeconfig(tmp_path: Path) -> Iterator[Path]:
    nodes = [_gpu_node("shared-0", "hami-core", 0), _gpu_node("mig-0", "mig", 1)]
    with KubeApiEmulator(EmulatorConfig(nodes=nodes), tmp_path / "kubeconfig") as emu:
        assert emu.kubeconfig is not None
        yield emu.kubeconfig


def _limits(memory: int, number: int = 1, cores: int = 0) -> str:
    notes = f'"volcano.sh/vgpu-number": "{number}", "volcano.sh/vgpu-memory": "{memory}"'
    notes += f', "volcano.sh/vgpu-cores": "{cores}"' if cores else ""
    return "\n            limits: {" + notes + "}"


def _job(name: str, node: str, memory: int, replicas: int, number: int = 1, cores: int = 0) -> str:
    pin = f"\n        nodeSelector: {{kubernetes.io/hostname: {node}}}"
    manifest = job_yaml(
        name, "default", replicas=replicas, duration=None, resources=_limits(memory, number, cores)
    )
    return manifest.replace("        restartPolicy: Never", "        restartPolicy: Never" + pin)


def _cards(status: pb.JobStatus) -> dict[str, tuple[str, list[tuple[int, int, int, int, str]]]]:
    """Per pod (the agent's uid): its node and the cards it names to the hub."""
    return {
        p.uid: (p.node, sorted((c.device, c.memory_mib, c.cores, c.geometry, c.instance) for c in p.cards))
        for p in status.placements
    }


def _last_status(agent: Agent, uid: str) -> pb.JobStatus:
    return [m.status for m in agent.out if m.WhichOneof("body") == "status" and m.status.job_uid == uid][-1]


def test_a_new_agent_reads_the_gpus_of_the_pods_it_takes_over(gpu_kubeconfig: Path) -> None:
    first = Agent(gpu_kubeconfig)
    reader = Cluster(gpu_kubeconfig)
    try:
        jobs = {
            "uid-share": _job("share", "shared-0", 4096, replicas=2, number=2, cores=30),
            "uid-cut": _job("cut", "mig-0", 8000, replicas=2),  # two 2g.10gb of one geometry
        }
        for uid, manifest in jobs.items():
            first.send(dispatch(uid, 1, manifest))
        first.until(lambda: all(first.run(u).phase == "Running" for u in jobs), 30, "both jobs running")
        first.until(
            lambda: all(_cards(_last_status(first, u)) for u in jobs), 15, "their pods' cards reported"
        )
        before = {u: _cards(_last_status(first, u)) for u in jobs}
        assert all(cards for pods in before.values() for _, cards in pods.values())
        mig_ids = sorted(
            p.metadata.annotations["volcano.sh/vgpu-ids-new"]
            for p in reader.pods("default", "volcano.sh/job-name=cut")
        )
        # Volcano's MIG ids: the geometry names the group, each instance its own position in it
        assert [i.split(",")[0].split("[")[1] for i in mig_ids] == ["group1-0]", "group1-1]"], mig_ids
        tables = node_cards(first.backend.nodes(), first.runtime.live_grants())
        first.abandon()  # as a kill -9

        second = Agent(gpu_kubeconfig)
        assert sorted(second.recover()) == sorted(jobs)
        # the pods name the same cards as before the restart, in the status the hub's dispatch gets
        for uid, manifest in jobs.items():
            second.send(dispatch(uid, 1, manifest))
            assert _cards(_last_status(second, uid)) == before[uid], uid
        # and the nodes' card tables the hub fits gangs against are the same
        assert node_cards(second.backend.nodes(), second.runtime.live_grants()) == tables
        second.stop()
    finally:
        reader.close()
