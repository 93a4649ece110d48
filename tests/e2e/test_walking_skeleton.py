"""A Volcano Job from `vglobal apply` through the hub's Postgres to an agent and back."""

from __future__ import annotations

import signal

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

MULTI_TASK = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: ps-worker
  annotations: {vglobal.io/sim-duration: %(duration)s}
spec:
  minAvailable: 3
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "2", memory: 4Gi}}}]
  - name: worker
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "8", nvidia.com/gpu: "4"}}}]
"""


def job_named(system: System, name: str) -> dict[str, object] | None:
    return next((j for j in system.get_json("jobs") if j["name"] == name), None)


def test_multi_task_job_completes_on_one_cluster(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=2))
    system.start_agent("west", sim_cluster("west", nodes=2, region="west"))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "two clusters registered", system)

    path = system.tmp / "job.yaml"
    path.write_text(MULTI_TASK % {"duration": "2s"})
    out = system.cli("apply", "-f", str(path)).stdout
    assert "ps-worker created" in out

    done = wait_for(
        lambda: (j := job_named(system, "ps-worker")) and j["phase"] == "Completed" and j,
        60,
        "the job to complete",
        system,
    )
    assert done["bindingPhase"] == "Succeeded"
    assert done["cluster"] in ("east", "west")
    assert done["generation"] == 1
    with system.client() as c:
        job = c.get_job("ps-worker")
    # All three pods ran on the chosen cluster (its nodes are named <cluster>-0, <cluster>-1).
    assert sorted(p.pod for p in job.placements) == [
        "ps-worker-ps-0",
        "ps-worker-worker-0",
        "ps-worker-worker-1",
    ]
    assert all(p.node.startswith(f"{done['cluster']}-") for p in job.placements)
    assert [(t.name, t.succeeded) for t in job.tasks] == [("ps", 1), ("worker", 2)]
    # Re-applying the same file is a no-op, and describe tells the story.
    assert "unchanged" in system.cli("apply", "-f", str(path)).stdout
    described = system.cli("describe", "job", "ps-worker").stdout
    for word in ("Succeeded", "Submitted", "Dispatched", done["cluster"]):
        assert word in described
    # Finished jobs release their queue usage.
    default = next(q for q in system.get_json("queues") if q["name"] == "default")
    assert default["allocated"] == {} and default["runningJobs"] == 0


def test_gang_goes_to_the_cluster_where_it_fits_not_the_sum(system: System) -> None:
    """2 x 8 GPUs: east has 4 nodes x 4 GPUs (16 in sum, no node fits), west has 2 x 8."""
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=4, gpus=4))
    system.start_agent("west", sim_cluster("west", nodes=2, gpus=8, region="west"))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "two clusters registered", system)
    path = system.tmp / "big.yaml"
    path.write_text(
        (MULTI_TASK % {"duration": "1s"})
        .replace('cpu: "8", nvidia.com/gpu: "4"', 'cpu: "8", nvidia.com/gpu: "8"')
        .replace("name: ps-worker", "name: big")
    )
    system.cli("apply", "-f", str(path))
    done = wait_for(
        lambda: (j := job_named(system, "big")) and j["phase"] == "Completed" and j,
        60,
        "big job done",
        system,
    )
    assert done["cluster"] == "west"


def test_cli_errors_exit_non_zero_with_the_servers_message(system: System) -> None:
    system.start_hub()
    bad = system.tmp / "bad.yaml"
    bad.write_text((MULTI_TASK % {"duration": "1s"}).replace('cpu: "2"', 'cpu: "two"'))
    res = system.cli("apply", "-f", str(bad), check=False)
    assert res.returncode != 0
    assert (
        'spec.tasks[0].template.spec.containers[0].resources.requests.cpu: invalid quantity "two"'
        in res.stderr
    )
    res = system.cli("describe", "job", "nope", check=False)
    assert res.returncode != 0 and "not found" in res.stderr
    assert system.get_json("jobs") == []
    # A closed queue refuses new jobs until it is opened again.
    assert "Closed" in system.cli("queue", "close", "default").stdout
    good = system.tmp / "good.yaml"
    good.write_text(MULTI_TASK % {"duration": "1s"})
    res = system.cli("apply", "-f", str(good), check=False)
    assert res.returncode != 0 and "FAILED_PRECONDITION" in res.stderr
    assert "Open" in system.cli("queue", "open", "default").stdout
    assert "created" in system.cli("apply", "-f", str(good)).stdout


def _running_on_east_with_west_standing_by(system: System, duration: str) -> None:
    """The job runs on east and west is registered, cordoned until then, so that the job lands on
    east and the time between its start and the test's fault does not include an agent's start-up
    (on a loaded machine the job could otherwise finish before the fault)."""
    system.start_agent("east", sim_cluster("east", nodes=1))
    system.start_agent("west", sim_cluster("west", nodes=1, region="west"))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "east and west registered", system)
    system.cli("cluster", "cordon", "west")
    path = system.tmp / "long.yaml"
    path.write_text(MULTI_TASK % {"duration": duration})
    system.cli("apply", "-f", str(path))
    with system.client() as c:  # polled in-process: a CLI process per look is slow on a busy machine
        wait_for(lambda: c.get_job("ps-worker").phase == "Running", 30, "running on east", system)
        c.uncordon_cluster("west")


def test_agent_killed_mid_job_is_failed_over_and_never_runs_twice(system: System) -> None:
    system.start_hub("--cluster-timeout", "2s", "--failover-after", "1s")
    _running_on_east_with_west_standing_by(system, "6s")

    system.kill("agent-east", signal.SIGKILL)
    done = wait_for(
        lambda: (j := job_named(system, "ps-worker")) and j["phase"] == "Completed" and j,
        60,
        "the job to finish on west",
        system,
    )
    assert done["cluster"] == "west"
    assert done["generation"] == 2
    east = next(c for c in system.get_json("clusters") if c["name"] == "east")
    assert east["state"] == "NotReady"
    with system.client() as c:
        events = [e.reason for e in c.explain_job("ps-worker").events]
        history = [(d.generation, d.cluster, d.outcome, d.fenced) for d in c.job_dispatches("ps-worker")]
        dispatches = c.job_dispatches("ps-worker")
    assert events.count("Dispatched") == 2 and "Requeued" in events
    # Its dispatch history: east's run failed over and was fenced off, west's completed.
    assert history == [(1, "east", "FailedOver", True), (2, "west", "Completed", False)]
    assert all(d.HasField("ended_at") for d in dispatches)
    assert dispatches[0].ended_at.ToDatetime() <= dispatches[1].dispatched_at.ToDatetime()


def test_partitioned_agent_is_fenced_when_it_returns(system: System) -> None:
    """A frozen agent loses its job to another cluster; when it wakes up it is told to cancel it."""
    system.start_hub("--cluster-timeout", "2s", "--failover-after", "1s")
    _running_on_east_with_west_standing_by(system, "4s")

    system.kill("agent-east", signal.SIGSTOP)
    wait_for(
        lambda: (j := job_named(system, "ps-worker")) and j["cluster"] == "west" and j,
        30,
        "failover to west",
        system,
    )
    system.kill("agent-east", signal.SIGCONT)
    done = wait_for(
        lambda: (j := job_named(system, "ps-worker")) and j["phase"] == "Completed" and j,
        60,
        "completion",
        system,
    )
    assert (done["cluster"], done["generation"]) == ("west", 2)
    with system.client() as c:
        job = c.get_job("ps-worker")
        wait_for(
            lambda: any(e.reason == "Fenced" for e in c.explain_job("ps-worker").events),
            20,
            "east to be told to cancel its stale run",
            system,
        )
    # The recorded run is west's alone: east's late reports of generation 1 changed nothing.
    assert job.placements and all(p.node.startswith("west-") for p in job.placements)


def test_hub_killed_mid_flight_loses_nothing(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=2))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    path = system.tmp / "job.yaml"
    path.write_text(MULTI_TASK % {"duration": "4s"})
    system.cli("apply", "-f", str(path))
    wait_for(lambda: (j := job_named(system, "ps-worker")) and j["phase"] == "Running", 30, "running", system)
    system.kill("hub", signal.SIGKILL)
    system.start_hub(name="hub-2")
    done = wait_for(
        lambda: (j := job_named(system, "ps-worker")) and j["phase"] == "Completed" and j,
        60,
        "completion",
        system,
    )
    assert (done["cluster"], done["generation"]) == ("east", 1)
