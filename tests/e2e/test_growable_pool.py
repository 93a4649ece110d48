"""A cluster that grows, through a hub and a simulated agent on the real clock: a gang bigger than
the cluster's nodes is admitted there, its agent grows the node pool, and the gang runs on the new
nodes once they are up."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e

CLOUD = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: cloud}
spec:
  nodeGroups:
  - name: gpu
    count: 1
    allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
    autoscale: {max: 3, provisionDelay: 2s}
"""
GANG = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pretrain}
spec:
  minAvailable: 3
  tasks:
  - name: w
    replicas: 3
    template:
      spec: {containers: [{name: w, image: x, resources: {requests: {nvidia.com/gpu: "8"}}}]}
"""


def test_a_gang_bigger_than_the_cluster_runs_once_its_pool_grows(system: System) -> None:
    system.start_hub()
    system.start_agent("cloud", CLOUD)
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "cloud registered", system)
    with system.client() as c:
        (pool,) = c.get_cluster("cloud").pools  # as the agent reported it, kept in the cluster's row
    assert (pool.name, pool.current, pool.max, pool.provision_seconds) == ("gpu", 1, 3, 2.0)
    system.apply_text("gang", GANG)
    job = wait_for(
        lambda: (j := system.job("pretrain")) and j["phase"] == "Running" and j, 90, "the gang to run", system
    )
    assert job["cluster"] == "cloud"
    with system.client() as c:
        events = c.explain_job("pretrain").events
    hub = [e.message for e in events if e.reason == "Provisioning"]
    assert hub == ["its gang needs 2 nodes of node pool gpu that cluster cloud can add"], hub
    agent = [(e.reason, e.message) for e in events if e.source == "agent/cloud"]
    grew = [m for r, m in agent if r == "TriggeredScaleUp"]
    assert grew == ["node pool gpu grows by 2 nodes for its gang (up in about 2s)"], agent
    with system.client() as c:
        cloud = c.get_cluster("cloud")
    assert cloud.nodes == 3  # the pool's new nodes are the cluster's own now
    assert [(p.current, p.max) for p in cloud.pools] == [(3, 3)]
    work = {w.node: [p for j in w.jobs for p in j.pods] for w in cloud.work}
    assert sorted(work) == ["gpu-0", "gpu-1", "gpu-2"] and all(len(p) == 1 for p in work.values()), work
    described = system.cli("describe", "cluster", "cloud").stdout
    assert "gpu: 3 of at most 3 nodes, new nodes up in about 2s" in described, described
