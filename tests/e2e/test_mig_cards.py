"""MIG fit through hub and agent processes: two clusters, one A100 (40960 MiB, MIG-capable) each. A
first MIG pod (5 GB) is pinned to `cut`, where the card takes the 1g.5gb geometry. A pod asking for a
30000 MiB MIG instance then fits `cut` by its totals (35840 MiB free) but only an untouched card
can give it a 7g.40gb: it goes to `fresh`, dispatched once; with `cut` alone it waits at the hub,
naming the MIG constraint and the cluster, and is never dispatched."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e


def _cluster(name: str) -> str:
    return f"""
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - name: {name}
    count: 1
    allocatable: {{cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "1"}}
    gpus: {{count: 1, memoryMiB: 40960, model: A100-SXM4-40GB, mig: true}}
"""


def _job(name: str, memory_mib: int, clusters: str = "") -> str:
    pin = f"\n  annotations: {{vglobal.io/clusters: {clusters}}}" if clusters else ""
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}{pin}
spec:
  minAvailable: 1
  tasks:
  - name: w
    replicas: 1
    template:
      metadata:
        annotations: {{volcano.sh/vgpu-mode: mig}}
      spec:
        containers:
        - name: c
          image: x
          resources:
            requests: {{cpu: "1"}}
            limits: {{volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "{memory_mib}"}}
"""


def _cut_card(system: System) -> None:
    """A 5 GB MIG pod runs on `cut` (no duration: it stays Running), so its card is cut 7 x 1g.5gb."""
    system.apply_text("small", _job("small", 4000, clusters="cut"))
    wait_for(lambda: system.job("small").get("bindingPhase") == "Running", 60, "small running on cut", system)
    assert system.job("small").get("cluster") == "cut"


def test_mig_pod_goes_to_the_cluster_whose_card_has_the_instance(system: System) -> None:
    system.start_hub()
    system.start_agent("cut", _cluster("cut"))
    system.start_agent("fresh", _cluster("fresh"))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "both clusters registered", system)
    _cut_card(system)
    system.apply_text("big", _job("big", 30000))
    wait_for(lambda: system.job("big").get("bindingPhase") == "Running", 60, "big running", system)
    assert system.job("big").get("cluster") == "fresh", system.job("big")
    out = system.cli("describe", "job", "big").stdout
    assert out.count(" Dispatched ") == 1 and " Rejected " not in out, out


def test_mig_pod_waits_at_the_hub_when_no_card_has_the_instance(system: System) -> None:
    system.start_hub()
    system.start_agent("cut", _cluster("cut"))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "the cluster registered", system)
    _cut_card(system)
    system.apply_text("big", _job("big", 30000))
    want = "no node in cluster cut has MIG cards with a free instance for 1 vGPU of 30000 MiB"
    # `small` never ends, so big holds this state: waiting for the reason cannot miss it
    wait_for(lambda: want in json.dumps(system.job("big")), 60, "the MIG reason", system)
    assert not system.job("big").get("cluster"), system.job("big")  # never dispatched
    out = system.cli("describe", "job", "big").stdout
    assert " Dispatched " not in out, out
