"""The one way in for jobs, through the real gRPC API on a real Postgres: SubmitJob and SubmitJobs,
a Job or a HyperJob, a dry run or not, each answer and each refusal naming the item it is about;
and a HyperJob's split over the clusters as the store holds them."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
import sqlalchemy as sa

from tests.integration.test_hyperjob_sdk import HYPERJOB
from tests.integration.test_jobs_api import counts, job
from vglobal.client import Client, VGlobalError
from vglobal.hub.submit import Accepted
from vglobal.model.hyperjob import HyperJob
from vglobal.model.job import CLUSTERS_ANNOTATION
from vglobal.model.manifests import parse_manifests
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import clusters as clusters_repo

CHILDREN = ["llm-trainer-0", "llm-trainer-1", "llm-eval-0"]


def _in_queue(manifest: str, queue: str) -> str:
    """The HyperJob with every child's template in ``queue``."""
    return manifest.replace("templateSpec:\n", f"templateSpec:\n      queue: {queue}\n")


def test_a_batch_of_one_job_is_stored_once_and_refused_naming_its_item(
    client: Client, engine: sa.Engine
) -> None:
    first = list(client.submit_jobs([(job("a"), "a")]).results)
    again = list(client.submit_jobs([(job("a"), "a")]).results)
    assert [(r.job.name, r.created) for r in first + again] == [("a", True), ("a", False)]
    assert again[0].job.uid == first[0].job.uid
    assert counts(engine) == (1, 1, 1)
    with pytest.raises(VGlobalError) as err:
        client.submit_jobs([(job("b", queue="nope"), "b")])
    assert err.value.code == grpc.StatusCode.NOT_FOUND
    assert err.value.message == 'jobs[0]: spec.queue: queue "nope" not found'
    with pytest.raises(VGlobalError) as err:
        client.submit_jobs([(job("a"), "another")])
    assert err.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert err.value.message == 'jobs[0]: job "team-a/a" already exists'
    assert counts(engine) == (1, 1, 1)


def test_a_refusal_in_a_batch_names_the_item_not_a_hyperjobs_child(client: Client, engine: sa.Engine) -> None:
    client.submit_job(job("a"), request_id="a")
    before = counts(engine)
    with pytest.raises(VGlobalError) as err:
        client.submit_jobs([(job("b"), "b"), (HYPERJOB % "llm", "llm"), (job("a"), "other")])
    assert err.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert err.value.message == 'jobs[2]: job "team-a/a" already exists'
    with pytest.raises(VGlobalError) as err:
        client.submit_jobs([(job("b"), "b"), (_in_queue(HYPERJOB % "llm", "nope"), "llm")])
    assert err.value.code == grpc.StatusCode.NOT_FOUND
    assert err.value.message == 'jobs[1]: spec.queue: queue "nope" not found'
    assert counts(engine) == before

    got = client.submit_jobs([(job("b"), "b"), (HYPERJOB % "llm", "llm"), (job("c"), "c")]).results
    assert [(r.job.name, r.created) for r in got] == [("b", True), ("llm-trainer-0", True), ("c", True)]
    assert [[k.name for k in r.hyperjob_children] for r in got] == [[], CHILDREN, []]
    assert counts(engine)[:2] == (before[0] + 5, before[1] + 5)


def test_a_dry_run_answers_as_a_real_submission_would_and_stores_nothing(
    client: Client, engine: sa.Engine
) -> None:
    before = counts(engine)
    one = client.submit_job(HYPERJOB % "llm", request_id="llm", dry_run=True)
    assert [k.name for k in one.hyperjob_children] == CHILDREN and one.created
    batch = client.submit_jobs([(job("a"), "a"), (HYPERJOB % "llm", "llm")], dry_run=True).results
    assert [(r.job.name, r.created) for r in batch] == [("a", True), ("llm-trainer-0", True)]
    assert [k.name for k in batch[1].hyperjob_children] == CHILDREN
    with pytest.raises(VGlobalError) as err:
        client.submit_jobs([(job("a"), "a"), (job("a"), "other")], dry_run=True)
    assert err.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert err.value.message == 'jobs[1]: job "team-a/a" already exists'
    assert counts(engine) == before


SPLIT = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: auto}
spec:
  replicatedJobs:
  - name: part
    splitPolicy: {mode: auto, accelerators: 16}
    templateSpec:
      tasks:
      - name: worker
        replicas: 1
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}}}]
"""


def _node(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "allocatable": {"cpu": 64000, "nvidia.com/gpu": 8000}, "labels": {}, **extra}


def test_a_split_reads_the_clusters_the_store_holds_counting_free_only_where_pods_may_go(
    engine: sa.Engine,
) -> None:
    """Cluster b reports 16 GPUs free, 8 of them on a node tainted NoSchedule: the split counts 8
    there, so 16 GPUs go 8 and 8 over a and b (b alone would take all 16 were the taint ignored)."""
    (hj,) = parse_manifests(SPLIT)
    assert isinstance(hj, HyperJob)
    free = {"cpu": 64000, "nvidia.com/gpu": 8000}
    with session_scope(make_sessionmaker(engine)) as session:
        clusters_repo.register("a", session=session, labels={}, nodes=[_node("a-0")], free={"a-0": free})
        clusters_repo.register(
            "b",
            session=session,
            labels={},
            nodes=[_node("b-0"), _node("b-1", taints=[{"key": "k", "effect": "NoSchedule"}])],
            free={"b-0": free, "b-1": free},
        )
        kids = Accepted(hj, "auto", None).submissions(session=session)
    placed = [
        (s.request_id, s.job.raw["metadata"]["annotations"][CLUSTERS_ANNOTATION], s.job.total_pods()) for s in kids
    ]
    assert sorted(c for _, c, _ in placed) == ["a", "b"]
    assert sorted((r, n) for r, _, n in placed) == [("auto#0", 1), ("auto#1", 1)]
