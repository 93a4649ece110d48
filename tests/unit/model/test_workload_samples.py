"""KubeRay's and LeaderWorkerSet's own samples (tests/fixtures/workloads, as their repositories ship
them) read into jobs with the gangs their Volcano integrations give them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from vglobal.model.job import Job
from vglobal.model.manifests import load_documents, parse_manifest
from vglobal.model.resources import ResourceVector

SAMPLES = Path(__file__).parents[2] / "fixtures" / "workloads"


def sample(name: str, kind: str) -> Job:
    (doc,) = [d for d in load_documents((SAMPLES / name).read_text()) if d["kind"] == kind]
    before = copy.deepcopy(doc)
    job = parse_manifest(doc)
    assert isinstance(job, Job) and job.raw == before  # the manifest is kept as given
    return job


def counts(job: Job) -> dict[str, tuple[int, int]]:
    return {t.name: (t.replicas, t.min_available) for t in job.tasks}


def test_kuberays_volcano_raycluster_sample_is_head_and_workers_in_its_queue() -> None:
    job = sample("ray-cluster.volcano-scheduler-queue.yaml", "RayCluster")
    assert job.queue == "kuberay-test-queue"
    assert counts(job) == {"head": (1, 1), "worker": (2, 2)} and job.min_available == 3
    assert job.tasks[0].pod_request == ResourceVector.from_quantities({"cpu": "1", "memory": "2Gi"})


def test_kuberays_volcano_rayjob_sample_adds_the_default_submitter_pod() -> None:
    job = sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    assert job.queue == "kuberay-test-queue"
    assert counts(job) == {"head": (1, 1), "small-group": (2, 2), "submitter": (1, 1)}
    submitter = job.tasks[-1].pod_request
    assert submitter == ResourceVector.from_quantities({"cpu": "500m", "memory": "200Mi"})


def test_the_plain_rayjob_sample_runs_in_the_default_queue() -> None:
    job = sample("ray-job.sample.yaml", "RayJob")
    assert job.queue == "default" and [t.name for t in job.tasks] == ["head", "small-group", "submitter"]


def test_the_autoscaler_sample_gangs_its_head_and_min_replicas() -> None:
    job = sample("ray-cluster.autoscaler.yaml", "RayCluster")
    assert counts(job) == {"head": (1, 1), "small-group": (0, 0)} and job.min_available == 1


@pytest.mark.parametrize(
    "name", ["leaderworkerset_v1_leaderworkerset.yaml", "leaderworkerset_multi_template.yaml"]
)
def test_the_lws_samples_are_three_groups_of_four_each_its_own_gang(name: str) -> None:
    job = sample(name, "LeaderWorkerSet")
    assert counts(job) == {"leader": (3, 1), "worker": (9, 3)}
    assert job.min_available == 4 and job.group_size() == 4
