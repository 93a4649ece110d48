"""A JobFlow diamond whose hub is killed -9 mid-flow: the hub that comes back carries the flow on
from the database, each step's Job made once and run once, in the order of the DAG."""

from __future__ import annotations

import signal

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

TEMPLATE = """
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: %(name)s}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      metadata: {annotations: {vglobal.io/sim-duration: %(seconds)s}}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
"""
FLOW = """
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: dia}
spec:
  jobRetainPolicy: retain
  flows:
  - name: a
  - name: b
    dependsOn: {targets: [a]}
  - name: c
    dependsOn: {targets: [a]}
  - name: d
    dependsOn: {targets: [b, c]}
"""


def test_a_hub_killed_mid_flow_is_carried_on_by_the_next(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=2))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    path = system.tmp / "flow.yaml"
    durations = {"a": "1s", "b": "3s", "c": "3s", "d": "1s"}
    path.write_text("".join(TEMPLATE % {"name": n, "seconds": s} for n, s in durations.items()) + FLOW)
    system.cli("apply", "-f", str(path))

    def jobs() -> dict[str, str]:
        return {j["name"]: j["phase"] for j in system.get_json("jobs")}

    wait_for(lambda: {"dia-b", "dia-c"} <= set(jobs()), 30, "the middle steps made", system)
    system.kill("hub", signal.SIGKILL)  # b and c run; d is still to be made
    system.start_hub(name="hub-2")
    wait_for(lambda: system.get_json("jobflows")[0]["phase"] == "Succeed", 60, "the flow succeeded", system)
    assert jobs() == {f"dia-{n}": "Completed" for n in "abcd"}
    with system.client() as c:
        flow = c.get_job_flow("dia")
        steps = {s.name: (s.created_at.ToDatetime(), s.finished_at.ToDatetime()) for s in flow.steps}
        assert steps["a"][1] <= min(steps["b"][0], steps["c"][0])
        assert max(steps["b"][1], steps["c"][1]) <= steps["d"][0]
        assert [e.reason for e in flow.events].count("Created") == 4  # each step made once
        for n in "abcd":
            job = c.explain_job(f"dia-{n}")
            assert job.job.generation == 1  # run once: never re-queued
            assert [e.reason for e in job.events].count("Dispatched") == 1
