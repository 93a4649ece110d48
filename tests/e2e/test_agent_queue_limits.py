"""The agent under the hub's queue limits, through hub and agent processes: an elastic job runs
no more pods than its queue's capability holds (the hub admits the gang, the agent places the
pods beyond it), and an agent whose conf has proportion places the job after a placed gang."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for
from vglobal.api.v1 import jobs_pb2

pytestmark = pytest.mark.e2e

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec: {weight: 1, capability: {cpu: "50"}}
"""


def job(name: str, replicas: int, min_available: int, cpu: str, queue: str = "q", on: str = "") -> str:
    where = f", annotations: {{vglobal.io/clusters: {on}}}" if on else ""
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}{where}}}
spec:
  queue: {queue}
  minAvailable: {min_available}
  tasks:
  - name: w
    replicas: {replicas}
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


PROPORTION = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def _running(j: jobs_pb2.Job) -> int:
    return sum(1 for p in j.placements if p.node and p.phase == "Running")


def test_fifty_pods_of_two_cpu_in_a_fifty_cpu_queue_run_twenty_five(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=2, cpu="64", gpus=0))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    system.apply_text("q", QUEUE)
    system.apply_text("big", job("big", 50, 20, "2"))
    with system.client() as c:
        wait_for(lambda: _running(c.get_job("big")) == 25, 60, "25 of big's pods running", system)
        # A job of another queue placed afterwards: the agent's session that places it tries
        # big's waiting pods too.
        system.apply_text("other", job("other", 2, 2, "1", queue="default"))
        wait_for(lambda: _running(c.get_job("other")) == 2, 60, "other's pods running", system)
        j = c.get_job("big")
        assert sum(1 for p in j.placements if p.node) == 25, [(p.pod, p.node) for p in j.placements]


def test_two_clusters_place_pods_beyond_their_gangs_within_one_capability(system: System) -> None:
    """Each cluster runs one elastic job of the 50-cpu queue: the room beyond the gangs is split
    between them (the first in job order first), so together they run 50 pods, not 30 on each."""
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1, cpu="64", gpus=0))
    system.start_agent("west", sim_cluster("west", nodes=1, cpu="64", gpus=0))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "east and west registered", system)
    system.apply_text("q", QUEUE)
    # In one file: both are admitted in one cycle, each agent seeing the other's gang only. One
    # SubmitJobs call gives both the same creation time, so their uids order them.
    system.apply_text("ab", job("a", 30, 10, "1", on="east") + "---" + job("b", 30, 10, "1", on="west"))
    with system.client() as c:
        first, second = sorted(
            ("a", "b"), key=lambda n: (c.get_job(n).created_at.ToNanoseconds(), c.get_job(n).uid)
        )
        wait_for(lambda: _running(c.get_job(first)) == 30, 60, f"{first}'s 30 pods running", system)
        wait_for(lambda: _running(c.get_job(second)) == 20, 60, f"20 of {second}'s pods running", system)
        # Another queue's job on each cluster: the sessions that place them try the waiting pods too.
        system.apply_text("other", job("oe", 2, 2, "1", queue="default", on="east") + "---"
                          + job("ow", 2, 2, "1", queue="default", on="west"))  # fmt: skip
        wait_for(lambda: all(_running(c.get_job(n)) == 2 for n in ("oe", "ow")), 60, "others' pods running", system)
        placed = [sum(1 for p in c.get_job(n).placements if p.node) for n in (first, second)]
        assert placed == [30, 20]


def test_a_proportion_agent_places_the_job_after_a_placed_gang(system: System) -> None:
    system.start_hub()
    conf = system.tmp / "proportion.conf"
    conf.write_text(PROPORTION)
    system.start_agent("east", sim_cluster("east", nodes=2, cpu="8", gpus=0), "--scheduler-conf", str(conf))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    system.apply_text("a", job("a", 8, 8, "1", queue="default"))
    with system.client() as c:
        wait_for(lambda: _running(c.get_job("a")) == 8, 60, "a's 8 pods running", system)
        system.apply_text("b", job("b", 8, 8, "1", queue="default"))
        wait_for(lambda: _running(c.get_job("b")) == 8, 60, "b's 8 pods running", system)
