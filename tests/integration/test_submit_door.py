"""The one way in for jobs, through the real gRPC API on a real Postgres: SubmitJob and SubmitJobs,
a Job or a HyperJob, a dry run or not, each answer and each refusal naming the item it is about."""

from __future__ import annotations

import grpc
import pytest
import sqlalchemy as sa

from tests.integration.test_hyperjob_sdk import HYPERJOB
from tests.integration.test_jobs_api import counts, job
from vglobal.client import Client, VGlobalError

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
