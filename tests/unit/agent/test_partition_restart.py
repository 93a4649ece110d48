"""RestartPartition (Volcano's TargetTypePartition): only the pods of the failed pod's partition
restart, "this partition only instead of the entire training job"."""

from __future__ import annotations

from typing import Any

from vglobal.agent.run import JobRun
from vglobal.model.partition import PARTITION_ID_LABEL
from vglobal.model.phases import JobPhase


def uids(run: JobRun) -> dict[str, str]:
    return {name: pod.uid for name, pod in run.pods.items()}


def partitioned(jobs: Any, action: str) -> dict[str, Any]:
    task = jobs.task("w", 6)
    task["partitionPolicy"] = {"totalPartitions": 3, "partitionSize": 2}
    return jobs.job(task, jobs.task("ps", 1), policies=[{"event": "PodEvicted", "action": action}])


def test_restart_partition_restarts_only_that_partition(sim: Any, jobs: Any) -> None:
    run = sim.start(partitioned(jobs, "RestartPartition"))
    assert run.phase == JobPhase.Running
    labels = {n: p.obj["metadata"]["labels"].get(PARTITION_ID_LABEL) for n, p in run.pods.items()}
    assert labels == {
        "job-w-0": "0",
        "job-w-1": "0",
        "job-w-2": "1",
        "job-w-3": "1",
        "job-w-4": "2",
        "job-w-5": "2",
        "job-ps-0": None,
    }
    before = uids(run)
    sim.at(5.0, lambda s: s.backend.delete_pod(run.pods["job-w-3"].uid))
    sim.run_until(6)
    after = uids(run)
    assert {n for n in before if after.get(n) != before[n]} == {"job-w-2", "job-w-3"}
    assert run.retry_count == 1 and "RestartPartition" in [e.reason for e in run.history]
    assert run.phase == JobPhase.Running


def test_restart_partition_of_a_task_without_partitions_restarts_the_task(sim: Any, jobs: Any) -> None:
    doc = jobs.job(
        jobs.task("w", 2),
        jobs.task("ps", 1),
        policies=[{"event": "PodEvicted", "action": "RestartPartition"}],
    )
    run = sim.start(doc)
    before = uids(run)
    sim.at(5.0, lambda s: s.backend.delete_pod(run.pods["job-w-1"].uid))
    sim.run_until(6)
    after = uids(run)
    assert {n for n in before if after.get(n) != before[n]} == {"job-w-0", "job-w-1"}
