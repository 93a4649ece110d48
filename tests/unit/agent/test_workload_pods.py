"""The pods the agent plans for a workload: a long-running kind's are not preemptable unless the
object says so; an LWS pod carries its group, so the scheduler places each group whole."""

from __future__ import annotations

from typing import Any

import pytest

from vglobal.agent.controller import JobController
from vglobal.model.job import Job
from vglobal.model.workloads import parse_run

POD = {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}
KEY = "volcano.sh/preemptable"


def _pods(job: Job) -> dict[str, dict[str, Any]]:
    return {
        f"{t.name}-{i}": JobController.pod_object(job, t, i, version=0)
        for t in job.tasks
        for i in range(t.replicas)
    }


def _deployment(meta: dict[str, Any], template: dict[str, Any] = POD) -> Job:
    return parse_run(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", **meta},
            "spec": {"replicas": 2, "template": template},
        }
    )


@pytest.mark.parametrize(
    ("meta", "template", "flag"),
    [
        ({}, POD, "false"),
        ({"annotations": {KEY: "true"}}, POD, "true"),
        ({"labels": {KEY: "true"}}, POD, "true"),
        ({}, {**POD, "metadata": {"labels": {KEY: "true"}}}, None),  # the template's own label stands
    ],
)
def test_a_long_running_kind_pins_its_pods_unless_it_says_true(
    meta: dict[str, Any], template: dict[str, Any], flag: str | None
) -> None:
    for pod in _pods(_deployment(meta, template)).values():
        assert pod["metadata"]["annotations"].get(KEY) == flag


def test_a_batch_job_and_a_rayjob_keep_their_pods_preemptable() -> None:
    batch = parse_run(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "b"}, "spec": {"template": POD}}
    )
    assert all(KEY not in p["metadata"]["annotations"] for p in _pods(batch).values())


def test_each_lws_pod_carries_its_group() -> None:
    lws = parse_run(
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "l"},
            "spec": {"replicas": 3, "leaderWorkerTemplate": {"size": 4, "workerTemplate": POD}},
        }
    )
    groups = {
        name: int(p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"])
        for name, p in _pods(lws).items()
    }
    assert groups == {
        **{f"leader-{g}": g for g in range(3)},
        **{f"worker-{i}": i // 3 for i in range(9)},
    }
