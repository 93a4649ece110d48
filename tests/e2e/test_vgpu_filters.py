"""Volcano's pod-level vGPU rules through hub and agent processes, each job free to go to two
clusters that hold it by their totals: a pod naming no ``volcano.sh/vgpu-mode`` takes a MIG
instance on a node in MIG mode, one naming ``hami-core`` never goes there; a gang of two with ``volcano.sh/vgpu-podgroup-policy: spread`` needs
two cards; a pod listing a GPU by UUID (``volcano.sh/vgpu-use-gpuuuid``) goes where that GPU is.
Each is dispatched once, to the cluster the agent's deviceshare would take it on."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e


def _cluster(name: str, cards: int, memory_mib: int, mig: bool = False) -> str:
    return f"""
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - name: {name}
    count: 1
    allocatable: {{cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "{cards}"}}
    gpus: {{count: {cards}, memoryMiB: {memory_mib}, model: A100-SXM4-40GB, mig: {str(mig).lower()}}}
"""


def _job(name: str, clusters: str, annotation: str, pods: int = 1) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  annotations: {{vglobal.io/clusters: "{clusters}"}}
spec:
  minAvailable: {pods}
  tasks:
  - name: w
    replicas: {pods}
    template:
      metadata:
        annotations: {{{annotation}}}
      spec:
        containers:
        - name: c
          image: x
          resources:
            requests: {{cpu: "1"}}
            limits: {{volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "4000"}}
"""


def _run(system: System, name: str, text: str) -> str:
    """Apply the job, wait until it runs; the cluster it runs on (dispatched there once)."""
    system.apply_text(name, text)
    wait_for(lambda: system.job(name).get("bindingPhase") == "Running", 60, f"{name} running", system)
    out = system.cli("describe", "job", name).stdout
    assert out.count(" Dispatched ") == 1 and " Rejected " not in out, out
    return str(system.job(name).get("cluster"))


def test_vgpu_mode_spread_and_gpu_uuid_choose_the_cluster(system: System) -> None:
    system.start_hub()
    system.start_agent("cut", _cluster("cut", 2, 40960, mig=True))
    system.start_agent("one", _cluster("one", 1, 40960))
    system.start_agent("two", _cluster("two", 2, 40960))
    wait_for(lambda: len(system.get_json("clusters")) == 3, 30, "the clusters registered", system)
    # a pod naming no mode takes a MIG instance on the MIG cluster, first by name; one naming
    # hami-core cannot use that cluster
    assert _run(system, "plain", _job("plain", "cut,one", "vglobal.io/note: x")) == "cut"
    assert _run(system, "hami", _job("hami", "cut,one", "volcano.sh/vgpu-mode: hami-core")) == "one"
    # without spread a gang of two shares the single card of `one`; with it, it needs two cards
    assert _run(system, "pack", _job("pack", "one,two", "vglobal.io/note: x", 2)) == "one"
    assert (
        _run(system, "spread", _job("spread", "one,two", "volcano.sh/vgpu-podgroup-policy: spread", 2))
        == "two"
    )
    # a simulated GPU's UUID is GPU-<node>-<index>: each pod goes where the GPU it lists is
    assert (
        _run(system, "pick-two", _job("pick-two", "one,two", "volcano.sh/vgpu-use-gpuuuid: GPU-two-0-1"))
        == "two"
    )
    assert (
        _run(system, "pick-one", _job("pick-one", "one,two", "volcano.sh/vgpu-use-gpuuuid: GPU-one-0-0"))
        == "one"
    )
