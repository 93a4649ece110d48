"""A lifecycle policy's timeout outlives the pod it was raised for, through hub and agent processes:
the hub evicts surplus pods of a low-priority job for a high-priority gang, the replacements cannot
be placed, and when the victim's ``PodEvicted -> RestartJob, timeout: 2s`` passes the job restarts."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for
from tests.e2e.test_preemption import CLASSES, URGENT

pytestmark = pytest.mark.e2e

VICTIM = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: victim}
spec:
  priorityClassName: low
  minAvailable: 2
  policies:
  - {event: PodEvicted, action: RestartJob, timeout: 2s}
  tasks:
  - name: w
    replicas: 4
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_evicted_pods_replacement_left_pending_restarts_the_job_at_the_timeout(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1, cpu="4", gpus=0))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    for name, text in (("classes", CLASSES), ("victim", VICTIM)):
        system.apply_text(name, text)
    with system.client() as c:
        wait_for(
            lambda: sum(1 for p in c.get_job("victim").placements if p.node and p.phase == "Running") == 4,
            60,
            "the victim's 4 pods running",
            system,
        )
        path = system.tmp / "urgent.yaml"
        path.write_text(URGENT)
        system.cli("apply", "-f", str(path))
        # The restart is an event that stays in the job's history: waited for, not polled for.
        events = wait_for(
            lambda: (
                (evs := c.explain_job("victim").events)
                and any(e.source == "agent/east" and e.reason == "RestartJob" for e in evs)
                and evs
            ),
            60,
            "the victim restarted by its PodEvicted policy's timeout",
            system,
        )
        agent = [e for e in events if e.source == "agent/east"]
        evicted = [e for e in agent if e.reason == "PodEvicted"]
        restart = next(e for e in agent if e.reason == "RestartJob")
        assert len(evicted) == 2, [e.message for e in agent]
        assert "PodEvicted on pod victim-w-" in restart.message
        # not at the eviction: only when 2s passed with the replacement still pending
        waited = restart.time.ToDatetime() - evicted[0].time.ToDatetime()
        assert waited.total_seconds() >= 2.0 - 0.01, waited
        assert [e.reason for e in agent].count("RestartJob") == 1
        victim = c.get_job("victim")
        assert victim.retry_count == 1 and victim.generation == 1 and victim.cluster == "east"
        urgent = c.get_job("urgent")
        assert urgent.generation == 1 and urgent.cluster == "east"
