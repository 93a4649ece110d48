"""Volcano job lifecycle policies run by the agent, seen through the hub."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

FLAKY = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: flaky
spec:
  maxRetry: 2
  tasks:
  - name: worker
    replicas: 2
    policies:
    - event: PodFailed
      action: RestartTask
    template:
      metadata:
        annotations: {vglobal.io/sim-duration: 1s, vglobal.io/sim-exit-code: "3"}
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
  - name: monitor
    replicas: 1
    template:
      metadata:
        annotations: {vglobal.io/sim-duration: 1h}
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_restart_task_policy_fires_until_max_retry(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    path = system.tmp / "flaky.yaml"
    path.write_text(FLAKY)
    system.cli("apply", "-f", str(path))
    job = wait_for(
        lambda: (j := next(iter(system.get_json("jobs")), None)) and j["phase"] == "Failed" and j,
        60,
        "the job to fail after its retries",
        system,
    )
    assert job["bindingPhase"] == "Failed"
    assert job["retryCount"] == 2
    with system.client() as c:
        events = c.explain_job("flaky").events
    agent_reasons = [e.reason for e in events if e.source == "agent/east"]
    # Each failed worker restarted its task (not the whole job), twice, then maxRetry failed the job.
    assert agent_reasons.count("RestartTask") == 2
    assert "RestartJob" not in agent_reasons
    assert agent_reasons[-1] == "JobFailed"
    default = next(q for q in system.get_json("queues") if q["name"] == "default")
    assert default["allocated"] == {} and default["runningJobs"] == 0
