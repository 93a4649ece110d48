"""Preemption inside a queue through hub and agent processes: a high-priority gang takes the place of
surplus pods of a lower-priority elastic job on a full cluster; the victim's PodEvicted policy runs
on its cluster, and no job runs twice."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""
# Elastic: 4 pods of 1 cpu fill the cluster, only 2 must run. No duration: it runs until stopped.
VICTIM = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: victim}
spec:
  priorityClassName: low
  minAvailable: 2
  policies:
  - {event: PodEvicted, action: RestartJob}
  tasks:
  - name: w
    replicas: 4
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""
URGENT = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: urgent}
spec:
  priorityClassName: high
  minAvailable: 2
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def _running_pods(job: dict[str, object]) -> int:
    pods = job.get("pods") or []
    return sum(1 for p in pods if isinstance(p, dict) and p.get("node") and p.get("phase") == "Running")


def test_high_priority_job_preempts_surplus_pods_of_its_queue(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1, cpu="4", gpus=0))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    for name, text in (("classes", CLASSES), ("victim", VICTIM)):
        system.apply_text(name, text)
    with system.client() as c:
        wait_for(
            lambda: (
                (j := c.get_job("victim")).binding_phase == "Running"
                and sum(1 for p in j.placements if p.node and p.phase == "Running") == 4
            ),
            60,
            "the victim's 4 pods running",
            system,
        )
        path = system.tmp / "urgent.yaml"
        path.write_text(URGENT)
        system.cli("apply", "-f", str(path))
        urgent = wait_for(
            lambda: (j := c.get_job("urgent")).binding_phase == "Running" and j,
            60,
            "the urgent job running in the victims' place",
            system,
        )
        assert urgent.cluster == "east" and urgent.generation == 1  # admitted once, never moved
        events = c.explain_job("urgent").events
        preempting = [e.message for e in events if e.reason == "Preempting"]
        assert len(preempting) == 1 and "evicting 2 pods of" in preempting[0], preempting
        # What a user reads names jobs as every command takes them: namespace/name, not the uid.
        described = system.cli("describe", "job", "urgent").stdout
        assert "evicting 2 pods of default/victim;" in described, described
        assert c.get_job("victim").uid not in described
        # The victim: 2 of its pods were evicted, its PodEvicted policy restarted it in place, on
        # the same run (generation 1), and its gang of 2 runs beside the urgent job.
        victim = wait_for(
            lambda: (
                (j := c.get_job("victim")).binding_phase == "Running"
                and sum(1 for p in j.placements if p.node and p.phase == "Running") == 2
                and j
            ),
            60,
            "the victim running its gang again",
            system,
        )
        assert victim.generation == 1 and victim.cluster == "east"
        reasons = [(e.source, e.reason) for e in c.explain_job("victim").events]
        assert [r for s, r in reasons if r == "Preempted" and not s.startswith("agent/")] == ["Preempted"]
        assert ("agent/east", "RestartJob") in reasons
        assert "for job default/urgent of priority 1000" in system.cli("describe", "job", "victim").stdout
        assert victim.retry_count == 1
    # Nothing ran twice: each job had one run, on east, and the cluster holds exactly 4 pods.
    jobs = {j["name"]: j for j in system.get_json("jobs")}
    assert {n: j["cluster"] for n, j in jobs.items()} == {"victim": "east", "urgent": "east"}
