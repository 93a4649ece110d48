"""Two hub replicas on one Postgres: both serve the API, one dispatches, no job is admitted twice."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

from tests.e2e.harness import System, free_port, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

JOB = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: j-%(i)02d
  annotations: {vglobal.io/sim-duration: 1s}
spec:
  tasks:
  - name: t
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "1"}}}]
"""


def test_two_replicas_never_admit_a_job_twice(system: System) -> None:
    system.start_hub()
    first = system.target
    system.target = f"127.0.0.1:{free_port()}"
    system.start_hub(name="hub-b")
    second = system.target
    system.target = first
    system.start_agent("east", sim_cluster("east", nodes=2, gpus=8))
    system.target = second
    system.start_agent("west", sim_cluster("west", nodes=2, gpus=8, region="west"))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "clusters registered", system)

    for hub, half in ((first, range(0, 15)), (second, range(15, 30))):
        path = system.tmp / f"jobs-{hub.rsplit(':', 1)[1]}.yaml"
        path.write_text("".join(JOB % {"i": i} for i in half))
        res = subprocess.run(
            [sys.executable, "-m", "vglobal", "--hub", hub, "apply", "-f", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert res.returncode == 0, res.stderr

    # Kill -9 one replica mid-flight (it may hold the leader lock): the other carries on, and the
    # killed one comes back on its address for the agent that was connected to it.
    system.kill("hub", signal.SIGKILL)
    system.target = first
    system.start_hub(name="hub-a2")
    system.target = second
    jobs = wait_for(
        lambda: (
            (js := system.get_json("jobs"))
            and all(j["phase"] == "Completed" for j in js)
            and len(js) == 30
            and js
        ),
        120,
        "all 30 jobs completed",
        system,
    )
    # The agents' own record, not the hub's: every run an agent started, with its generation.
    started = runs_started(system, ("east", "west"))
    with system.client() as c:
        for j in jobs:
            events = [e.reason for e in c.explain_job(j["name"]).events]
            assert events.count("Dispatched") == j["generation"], (j["name"], events)
    # No cluster went silent for --cluster-timeout, so nothing was failed over: each job was
    # admitted once, at generation 1, and exactly one run of it was started, on the cluster the
    # hub recorded. A job both replicas admitted would have been started twice (two generations,
    # on one cluster or on both).
    assert {j["name"]: started.get(j["name"], []) for j in jobs} == {
        j["name"]: [(j["cluster"], 1)] for j in jobs
    }
    assert set(started) == {j["name"] for j in jobs}


# The line an agent logs when it starts a run of a dispatched job (vglobal/agent/core.py).
_ACCEPT = re.compile(r"accept job [^/\s]+/(\S+) \([^)]*\) gen (\d+)")


def runs_started(system: System, clusters: tuple[str, ...]) -> dict[str, list[tuple[str, int]]]:
    """Job name -> [(cluster, generation)] for every run the agents' logs say they started."""
    out: dict[str, list[tuple[str, int]]] = {}
    for cluster in clusters:
        for name, gen in _ACCEPT.findall(system.whole_log(f"agent-{cluster}")):
            out.setdefault(name, []).append((cluster, int(gen)))
    return out
