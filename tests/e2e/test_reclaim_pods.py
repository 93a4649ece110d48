"""Reclaim of surplus pods across queues through hub and agent processes: queue a runs an elastic job
over its deserved share; queue b's job takes back only the surplus pods, and a's job keeps running
its gang on the same run."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: qa}
spec: {weight: 1, deserved: {cpu: "2"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: qb}
spec: {weight: 1, deserved: {cpu: "2"}}
"""
# Elastic: 4 pods of 1 cpu fill the cluster, only 2 must run. No duration: it runs until stopped.
ELASTIC = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: elastic}
spec:
  queue: qa
  minAvailable: 2
  tasks:
  - name: w
    replicas: 4
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""
TAKER = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: taker}
spec:
  queue: qb
  minAvailable: 2
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def _running(job: object) -> set[str]:
    return {p.pod for p in job.placements if p.node and p.phase == "Running"}  # type: ignore[attr-defined]


def test_a_queue_below_deserved_reclaims_only_surplus_pods(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1, cpu="4", gpus=0))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    for name, text in (("queues", QUEUES), ("elastic", ELASTIC)):
        system.apply_text(name, text)
    with system.client() as c:
        before = wait_for(
            lambda: (j := c.get_job("elastic")).binding_phase == "Running" and len(_running(j)) == 4 and j,
            60,
            "the elastic job's 4 pods running",
            system,
        )
        first = _running(before)
        path = system.tmp / "taker.yaml"
        path.write_text(TAKER)
        system.cli("apply", "-f", str(path))
        taker = wait_for(
            lambda: (j := c.get_job("taker")).binding_phase == "Running" and len(_running(j)) == 2 and j,
            60,
            "the taker running in the surplus pods' place",
            system,
        )
        assert taker.cluster == "east" and taker.generation == 1
        reclaiming = [e.message for e in c.explain_job("taker").events if e.reason == "Reclaiming"]
        assert len(reclaiming) == 1 and "evicting 2 pods of" in reclaiming[0], reclaiming
        elastic = c.get_job("elastic")
        # Its gang of 2 runs on, on the same run: 2 of its first 4 pods, never replaced.
        assert elastic.binding_phase == "Running" and elastic.generation == 1 and elastic.retry_count == 0
        kept = _running(elastic)
        assert len(kept) == 2 and kept <= first, (kept, first)
        hub_events = [e for e in c.explain_job("elastic").events if not e.source.startswith("agent/")]
        reclaimed = [e.message for e in hub_events if e.reason == "Reclaimed"]
        assert len(reclaimed) == 1 and reclaimed[0].startswith("2 pods to evict: queue qa is above"), (
            reclaimed
        )
