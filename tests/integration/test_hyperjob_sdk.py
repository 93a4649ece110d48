"""A HyperJob's whole life through the Python SDK (vglobal.client) against a real hub: submit
(SubmitJob and SubmitJobs), get, list, cancel and delete, and bad input refused naming the field
with nothing stored."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from vglobal.aio import AsyncClient
from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub

HYPERJOB = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: %s}
spec:
  minAvailable: 2
  failurePolicy: MoveChild
  replicatedJobs:
  - name: trainer
    replicas: 2
    templateSpec:
      tasks:
      - name: worker
        replicas: 2
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
  - name: eval
    templateSpec:
      tasks:
      - name: worker
        replicas: 1
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""

CHILDREN = ["llm-trainer-0", "llm-trainer-1", "llm-eval-0"]


def _waiting_reason(client: Client, name: str) -> str:
    """The HyperJob's reason once admission has looked at it (no cluster: it waits for ever)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = client.get_hyperjob(name).waiting_reason
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"HyperJob {name} got no waiting reason")


def test_submit_get_list_cancel_delete_through_the_sdk(client: Client) -> None:
    submitted = client.submit_job(HYPERJOB % "llm", request_id="llm-1")
    assert [k.name for k in submitted.hyperjob_children] == CHILDREN
    again = client.submit_job(HYPERJOB % "llm", request_id="llm-1")  # the same request: no new children
    assert [k.uid for k in again.hyperjob_children] == [k.uid for k in submitted.hyperjob_children]

    got = client.get_hyperjob("llm")
    assert (got.name, got.namespace, got.queue) == ("llm", "default", "default")
    assert (got.phase, got.min_available, got.failure_policy, got.running_children) == (
        "Pending",
        2,
        "MoveChild",
        0,
    )
    assert [(k.name, k.replicated_job, k.index, k.cluster) for k in got.children] == [
        ("llm-trainer-0", "trainer", 0, ""),
        ("llm-trainer-1", "trainer", 1, ""),
        ("llm-eval-0", "eval", 2, ""),
    ]
    reason = _waiting_reason(client, "llm")
    assert reason.startswith(
        "HyperJob default/llm waits whole (2 children must start together): child llm-trainer-0 "
    )
    assert reason.endswith("fits no cluster: no candidate cluster")

    batch = client.submit_jobs([(HYPERJOB % "other", "other-1")])
    assert [k.name for k in batch.results[0].hyperjob_children] == [
        "other-trainer-0",
        "other-trainer-1",
        "other-eval-0",
    ]
    assert [h.name for h in client.list_hyperjobs("default")] == ["llm", "other"]
    assert [h.name for h in client.list_hyperjobs()] == ["llm", "other"]
    assert client.list_hyperjobs("elsewhere") == []

    cancelled = client.cancel_hyperjob("llm")
    assert cancelled.phase == "Aborted"
    assert [k.phase for k in cancelled.children] == ["Aborted"] * 3
    assert [client.get_job(n).phase for n in CHILDREN] == ["Aborted"] * 3
    assert client.get_hyperjob("other").phase == "Pending"  # the other one is untouched

    deleted = client.delete_hyperjob("llm")
    assert sorted(deleted.uids) == sorted(k.uid for k in submitted.hyperjob_children)
    with pytest.raises(VGlobalError) as err:
        client.get_hyperjob("llm")
    assert err.value.code == grpc.StatusCode.NOT_FOUND and "llm" in err.value.message
    assert client.list_jobs(labels={"volcano.sh/hyperjob-name": "llm"}) == []
    assert [h.name for h in client.list_hyperjobs()] == ["other"]
    for call in (client.cancel_hyperjob, client.delete_hyperjob):
        with pytest.raises(VGlobalError) as err:
            call("llm")
        assert err.value.code == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (("failurePolicy: MoveChild", "failurePolicy: Retry"), "spec.failurePolicy"),
        (("minAvailable: 2", "minAvailable: 4"), "spec.minAvailable"),
        (("- name: eval", "- name: Bad_Eval"), "spec.replicatedJobs[1].name"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(
    client: Client, bad: tuple[str, str], field: str
) -> None:
    manifest = (HYPERJOB % "llm").replace(*bad)
    with pytest.raises(VGlobalError) as err:
        client.submit_job(manifest)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and field in err.value.message
    # In a batch, a bad HyperJob refuses the whole batch, the good one beside it included.
    with pytest.raises(VGlobalError) as err:
        client.submit_jobs([(HYPERJOB % "good", ""), (manifest, "")])
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and field in err.value.message
    assert client.list_hyperjobs() == [] and client.list_jobs() == []


async def _async_life(target: str) -> tuple[list[str], str, str, list[str], list[str]]:
    async with AsyncClient(target) as ac:
        submitted = await ac.submit_job(HYPERJOB % "llm", request_id="async-1")
        got = await ac.get_hyperjob("llm")
        cancelled = await ac.cancel_hyperjob("llm")
        deleted = await ac.delete_hyperjob("llm")
        return (
            [k.name for k in submitted.hyperjob_children],
            got.phase,
            cancelled.phase,
            sorted(deleted.uids),
            sorted(k.uid for k in submitted.hyperjob_children),
        )


def test_the_async_sdk_submits_gets_cancels_and_deletes_a_hyperjob(hub: Hub, client: Client) -> None:
    names, phase, cancelled, deleted, uids = asyncio.run(_async_life(f"127.0.0.1:{hub.port}"))
    assert (names, phase, cancelled, deleted) == (CHILDREN, "Pending", "Aborted", uids)
    assert client.list_hyperjobs() == []
