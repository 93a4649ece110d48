"""Queue rules through the real gRPC API."""

from __future__ import annotations

import grpc
import pytest
import sqlalchemy as sa

from vglobal.client import Client, VGlobalError


def queue(name: str, **spec: object) -> str:
    lines = [
        "apiVersion: scheduling.volcano.sh/v1beta1",
        "kind: Queue",
        f"metadata: {{name: {name}}}",
        "spec:",
    ]
    lines += [f"  {k}: {v}" for k, v in spec.items()] or ["  weight: 1"]
    return "\n".join(lines) + "\n"


JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j1}
spec:
  queue: %s
  tasks:
  - name: t
    replicas: 1
    template: {spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}}
"""


def test_default_queue_exists_from_the_start(client: Client) -> None:
    assert [q.name for q in client.list_queues()] == ["default"]


def test_apply_get_update_queue(client: Client) -> None:
    q = client.apply_queue(queue("team-a", weight=3, capability="{nvidia.com/gpu: 16}"))
    assert (q.name, q.weight, q.parent, q.state) == ("team-a", 3, "root", "Open")
    client.apply_queue(queue("team-a", weight=5))
    assert client.get_queue("team-a").weight == 5


def test_bad_queue_is_refused_and_changes_nothing(client: Client) -> None:
    for text, field in [
        (queue("team-a", weight=70000), "spec.weight"),
        (queue("team-a", capability="{cpu: lots}"), "spec.capability.cpu"),
        (queue("child", parent="missing"), "spec.parent"),
    ]:
        with pytest.raises(VGlobalError) as err:
            client.apply_queue(text)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert field in err.value.message
    assert [q.name for q in client.list_queues()] == ["default"]


def test_delete_refused_with_live_jobs_then_allowed(client: Client, engine: sa.Engine) -> None:
    client.apply_queue(queue("team-a"))
    client.submit_job(JOB % "team-a")
    with pytest.raises(VGlobalError) as err:
        client.delete_queue("team-a")
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "unfinished" in err.value.message
    client.cancel_job("j1")
    # Only a finished job is left: its record goes with the queue only when asked to.
    with pytest.raises(VGlobalError) as err:
        client.delete_queue("team-a")
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION and "force" in err.value.message
    assert client.get_job("j1").phase == "Aborted"
    assert client.delete_queue("team-a", force=True).deleted_jobs == 1
    assert [q.name for q in client.list_queues()] == ["default"]


def test_closed_queue_refuses_submissions(client: Client) -> None:
    client.apply_queue(queue("team-a"))
    assert client.close_queue("team-a").state == "Closed"
    with pytest.raises(VGlobalError) as err:
        client.submit_job(JOB % "team-a")
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert client.open_queue("team-a").state == "Open"
    client.submit_job(JOB % "team-a")


def test_jobs_only_in_leaf_queues(client: Client) -> None:
    client.apply_queue(queue("org"))
    client.apply_queue(queue("team-a", parent="org"))
    with pytest.raises(VGlobalError) as err:
        client.submit_job(JOB % "org")
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION
    client.submit_job(JOB % "team-a")
    with pytest.raises(VGlobalError) as err:
        client.delete_queue("org")
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_list_queues_counts_pending_jobs(client: Client) -> None:
    client.apply_queue(queue("team-a"))
    client.submit_job(JOB % "team-a")
    q = {q.name: q for q in client.list_queues()}["team-a"]
    assert (q.pending_jobs, q.running_jobs) == (1, 0)
