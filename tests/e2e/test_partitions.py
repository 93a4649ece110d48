"""A partitioned gang goes only to a cluster where every partition fits whole inside one ToR within
one spine, and the agent places each partition's pods inside one ToR there."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, wait_for
from tests.e2e.test_topology import racks

pytestmark = pytest.mark.e2e

# 2 partitions of 3 pods of 8 GPUs: the job inside one spine (tier 2), each partition inside one
# ToR (tier 1). No duration: the pods hold their nodes while the test looks at them.
JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  networkTopology: {mode: hard, highestTierAllowed: 2}
  tasks:
  - name: worker
    replicas: 6
    partitionPolicy:
      totalPartitions: 2
      partitionSize: 3
      networkTopology: {mode: hard, highestTierAllowed: 1}
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "8", nvidia.com/gpu: "8"}}}]
"""


def test_partitions_go_to_the_cluster_whose_tors_hold_them_and_stay_inside_one_tor(system: System) -> None:
    system.start_hub()
    # Both have 6 free 8-GPU nodes under one spine: "a-wide" 2 behind each of 3 ToRs (first by
    # name, so it would take a plain gang), "b-deep" 3 behind each of 2.
    system.start_agent("a-wide", racks("a-wide", racks=3, per_rack=2))
    system.start_agent("b-deep", racks("b-deep", racks=2, per_rack=3))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "clusters registered", system)
    path = system.tmp / "job.yaml"
    path.write_text(JOB)
    system.cli("apply", "-f", str(path))
    with system.client() as c:
        job = wait_for(
            lambda: (
                (j := c.get_job("train")).binding_phase == "Running"
                and sum(1 for p in j.placements if p.node and p.phase == "Running") == 6
                and j
            ),
            60,
            "the 6 pods running",
            system,
        )
        assert job.cluster == "b-deep" and job.generation == 1  # dispatched once, placed there
        tor = {p.pod: p.node.rsplit("-", 1)[0] for p in job.placements}  # b-deep-r{R}-{k} -> rack
        first = {tor[f"train-worker-{i}"] for i in range(3)}
        second = {tor[f"train-worker-{i}"] for i in range(3, 6)}
        assert len(first) == 1 and len(second) == 1 and first != second, tor
