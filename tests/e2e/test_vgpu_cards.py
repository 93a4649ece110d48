"""Card-level vGPU fit through hub and agent processes: two clusters hold 24000 MiB of vGPU memory
on one node each, one as 2 cards of 12000 MiB, the other as one card of 24000 MiB. A pod asking for
a 20000 MiB vGPU goes to the one whose card holds it (dispatched once, never handed back); with the
split cluster alone it waits at the hub, saying which card it lacks."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e


def _cluster(name: str, cards: int, memory_mib: int) -> str:
    return f"""
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - name: {name}
    count: 1
    allocatable: {{cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "{cards}"}}
    gpus: {{count: {cards}, memoryMiB: {memory_mib}, model: A100}}
"""


JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: big-vgpu}
spec:
  minAvailable: 1
  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        containers:
        - name: c
          image: x
          resources:
            requests: {cpu: "1"}
            limits: {volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "20000"}
"""


def _job(system: System) -> dict[str, object]:
    return next((j for j in system.get_json("jobs") if j["name"] == "big-vgpu"), {})


def _apply(system: System) -> None:
    path = system.tmp / "job.yaml"
    path.write_text(JOB)
    system.cli("apply", "-f", str(path))


def test_vgpu_goes_to_the_cluster_whose_card_holds_it(system: System) -> None:
    system.start_hub()
    system.start_agent("a-split", _cluster("a-split", 2, 12000))
    system.start_agent("b-whole", _cluster("b-whole", 1, 24000))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "both clusters registered", system)
    _apply(system)
    wait_for(lambda: _job(system).get("bindingPhase") == "Running", 60, "big-vgpu running", system)
    assert _job(system).get("cluster") == "b-whole", _job(system)
    out = system.cli("describe", "job", "big-vgpu").stdout
    assert out.count(" Dispatched ") == 1 and " Rejected " not in out, out


def test_vgpu_waits_at_the_hub_when_no_card_holds_it(system: System) -> None:
    system.start_hub()
    system.start_agent("a-split", _cluster("a-split", 2, 12000))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "the cluster registered", system)
    _apply(system)
    want = "no node in cluster a-split has a card with 20000 MiB free (most: 12000 MiB)"
    # the job holds this state (no cluster can ever take it): waiting for the reason cannot miss it
    wait_for(lambda: want in json.dumps(_job(system)), 60, "the card reason", system)
    assert not _job(system).get("cluster"), _job(system)  # never dispatched
