"""Exact-fit preemption at 256Gi through hub and agent processes: two running jobs of 256Gi fill a
queue capped at 512Gi; a higher-priority job of 256Gi takes the place of the lower-priority one
alone, and runs. Quantities are exact integers: the victim frees just what the preemptor needs."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, wait_for
from vglobal.api.v1 import jobs_pb2

pytestmark = pytest.mark.e2e

CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: east, labels: {region: east}}
spec:
  nodeGroups:
  - name: east
    count: 1
    allocatable: {cpu: "64", memory: 1Ti, pods: "110"}
"""
SETUP = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mid}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec: {weight: 1, capability: {memory: 512Gi}}
"""


def job(name: str, priority: str) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: q
  priorityClassName: {priority}
  minAvailable: 1
  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1", memory: 256Gi}}}}}}]
"""


def _running(j: jobs_pb2.Job) -> bool:
    return j.binding_phase == "Running" and any(p.node and p.phase == "Running" for p in j.placements)


def test_exact_fit_preemption_at_256gi_evicts_one_job(system: System) -> None:
    system.start_hub()
    system.start_agent("east", CLUSTER)
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    system.apply_text("setup", SETUP)
    system.apply_text("low", job("low", "low"))
    system.apply_text("mid", job("mid", "mid"))
    with system.client() as c:
        wait_for(
            lambda: _running(c.get_job("low")) and _running(c.get_job("mid")),
            60,
            "low and mid running",
            system,
        )
        system.apply_text("urgent", job("urgent", "high"))
        wait_for(lambda: _running(c.get_job("urgent")), 60, "urgent running in low's place", system)
        preempting = [e.message for e in c.explain_job("urgent").events if e.reason == "Preempting"]
        assert len(preempting) == 1, preempting
        # mid was never a victim: it runs its first run, and only low was preempted.
        mid = c.get_job("mid")
        assert _running(mid) and mid.generation == 1 and mid.retry_count == 0
        assert not [e for e in c.explain_job("mid").events if e.reason == "Preempted"]
        assert [e.reason for e in c.explain_job("low").events if e.reason == "Preempted"][:1] == ["Preempted"]
        assert not _running(c.get_job("low"))  # the queue holds mid and urgent: 512Gi
