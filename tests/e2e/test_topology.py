"""A hard-topology gang goes only to a cluster that can hold it inside one HyperNode of allowed tier."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e


def racks(name: str, racks: int, per_rack: int) -> str:
    groups = "".join(
        f"""
  - name: {name}-r{r}
    count: {per_rack}
    allocatable: {{cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}}
    labels: {{example.com/tor: tor{r}, example.com/spine: sp0}}"""
        for r in range(racks)
    )
    return f"""
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:{groups}
  hyperNodeDiscovery:
    networkTopologyTypes:
      dc:
      - nodeLabel: example.com/spine
      - nodeLabel: example.com/tor
      - nodeLabel: kubernetes.io/hostname
"""


JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: allreduce
  annotations: {vglobal.io/sim-duration: 2s}
spec:
  networkTopology: {mode: hard, highestTierAllowed: 1}
  tasks:
  - name: worker
    replicas: 3
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "8", nvidia.com/gpu: "8"}}}]
"""


def test_hard_gang_skips_the_cluster_whose_switches_are_too_small(system: System) -> None:
    system.start_hub()
    # "a-wide" has 4 free 8-GPU nodes but only 2 behind each ToR; "b-deep" has 3 behind one ToR.
    system.start_agent("a-wide", racks("a-wide", racks=2, per_rack=2))
    system.start_agent("b-deep", racks("b-deep", racks=1, per_rack=3))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "clusters registered", system)
    tree = system.cli("get", "hypernodes", "--cluster", "a-wide").stdout
    assert "tier 1" in tree and "tier 2" in tree and "a-wide-r0-0" in tree
    path = system.tmp / "job.yaml"
    path.write_text(JOB)
    system.cli("apply", "-f", str(path))
    job = wait_for(
        lambda: (j := next(iter(system.get_json("jobs")), None)) and j["phase"] == "Completed" and j,
        60,
        "the gang to run and complete",
        system,
    )
    assert job["cluster"] == "b-deep"
    with system.client() as c:
        pods = c.get_job("allreduce").placements
    assert sorted(p.node for p in pods) == ["b-deep-r0-0", "b-deep-r0-1", "b-deep-r0-2"]
