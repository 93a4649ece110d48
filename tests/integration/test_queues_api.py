"""Queue rules through the real gRPC API."""

from __future__ import annotations

import json

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


AFFINITY = (
    "{nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [g1],"
    " preferredDuringSchedulingIgnoredDuringExecution: [g2, g3]},"
    " nodeGroupAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [g4]}}"
)


def test_queue_affinity_is_stored_and_returned(client: Client) -> None:
    client.apply_queue(queue("team-a", affinity=AFFINITY))
    q = client.get_queue("team-a")
    assert list(q.affinity.node_group_affinity.required) == ["g1"]
    assert list(q.affinity.node_group_affinity.preferred) == ["g2", "g3"]
    assert list(q.affinity.node_group_anti_affinity.required) == ["g4"]
    assert not client.get_queue("default").HasField("affinity")
    listed = {x.name: x for x in client.list_queues()}
    assert listed["team-a"].affinity == q.affinity


def test_bad_queue_affinity_is_refused(client: Client) -> None:
    for affinity, field in [
        ("{nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: g1}}", "must be a list"),
        ("{nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: ['a b']}}", "[0]"),
        ("{nodeGroupAffinity: {required: [g1]}}", "spec.affinity.nodeGroupAffinity.required"),
    ]:
        with pytest.raises(VGlobalError) as err:
            client.apply_queue(queue("team-a", affinity=affinity))
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "spec.affinity.nodeGroupAffinity" in err.value.message and field in err.value.message
    assert [q.name for q in client.list_queues()] == ["default"]


def test_bad_node_group_resource_limits_are_refused(client: Client) -> None:
    """volcano.sh/nodegroup-resource-limits must be a JSON object of group -> {resource: quantity}
    (Volcano would accept the Queue and then place none of its pods)."""
    key = "volcano.sh/nodegroup-resource-limits"
    for value, says in [
        ('{"g1": {"cpu":', "not JSON"),
        ('["g1"]', "expected a JSON object"),
        ('{"g1": {"cpu": "lots"}}', 'g1.cpu: invalid quantity "lots"'),
    ]:
        text = f"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: team-a
  annotations: {{{key}: {json.dumps(value)}}}
spec: {{weight: 1}}
"""
        with pytest.raises(VGlobalError) as err:
            client.apply_queue(text)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert f'metadata.annotations["{key}"]' in err.value.message and says in err.value.message, err.value
    assert [q.name for q in client.list_queues()] == ["default"]
    good = '{"g1": {"cpu": "3", "memory": "8Gi"}}'
    client.apply_queue(text.replace(json.dumps('{"g1": {"cpu": "lots"}}'), json.dumps(good)))
    assert client.get_queue("team-a").name == "team-a"


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
