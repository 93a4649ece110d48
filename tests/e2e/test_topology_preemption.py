"""A hard-topology gang preempts inside one ToR, through hub and agent processes: the hub takes its
victims from one HyperNode of the allowed tier, the agent places the gang there, and no second
round of evictions follows (no hand-back after --bind-timeout)."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, wait_for
from tests.e2e.test_preemption import CLASSES  # low 10, high 1000

pytestmark = pytest.mark.e2e

# two ToRs of two 4-cpu nodes under one spine
CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: east}
spec:
  nodeGroups:
  - name: east-r0
    count: 2
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
    labels: {example.com/tor: tor0, example.com/spine: sp0}
  - name: east-r1
    count: 2
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
    labels: {example.com/tor: tor1, example.com/spine: sp0}
  hyperNodeDiscovery:
    networkTopologyTypes:
      dc:
      - nodeLabel: example.com/spine
      - nodeLabel: example.com/tor
      - nodeLabel: kubernetes.io/hostname
"""
GANG = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: gang}
spec:
  priorityClassName: high
  minAvailable: 2
  networkTopology: {mode: hard, highestTierAllowed: 1}
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "4"}}}]
"""


def _filler(node: str, priority: str) -> str:
    """A one-pod job filling ``node`` (no duration: it runs until stopped)."""
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: f-{node}}}
spec:
  priorityClassName: {priority}
  minAvailable: 1
  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        nodeSelector: {{kubernetes.io/hostname: {node}}}
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "4"}}}}}}]
"""


def test_a_hard_topology_gang_preempts_inside_one_tor_in_one_round(system: System) -> None:
    system.start_hub()
    system.start_agent("east", CLUSTER, "--bind-timeout", "5s")
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    system.apply_text("classes", CLASSES)
    # equal priorities, the newest filler of each ToR last: blind to ToRs, those two would make room
    # for the gang in the cluster and in neither ToR
    fillers = ["east-r0-0", "east-r1-0", "east-r0-1", "east-r1-1"]
    for node in fillers:
        system.apply_text(f"f-{node}", _filler(node, "low"))
    with system.client() as c:
        wait_for(
            lambda: all(c.get_job(f"f-{n}").binding_phase == "Running" for n in fillers),
            60,
            "the four fillers running, one per node",
            system,
        )
        system.apply_text("gang", GANG)
        gang = wait_for(
            lambda: (j := c.get_job("gang")).binding_phase == "Running" and j,
            60,
            "the gang running in the place of one ToR's fillers",
            system,
        )
        assert gang.cluster == "east" and gang.generation == 1  # admitted once, never handed back
        nodes = sorted(p.node for p in gang.placements)
        assert nodes in (["east-r0-0", "east-r0-1"], ["east-r1-0", "east-r1-1"]), nodes
        preempting = [e.message for e in c.explain_job("gang").events if e.reason == "Preempting"]
        assert len(preempting) == 1, preempting  # one round of evictions
        evicted = {
            n
            for n in fillers
            if any(e.reason == "Preempted" for e in c.explain_job(f"f-{n}").events)
        }
        assert evicted == set(nodes)  # both fillers of the gang's ToR, none of the other
