"""SubmitJob and friends through the real gRPC API on a real Postgres."""

from __future__ import annotations

import grpc
import pytest
import sqlalchemy as sa

from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %(name)s, namespace: team-a}
spec:
  queue: %(queue)s
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: "2", memory: 4Gi}}
  - name: worker
    replicas: 3
    template:
      spec:
        containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: "%(cpu)s", nvidia.com/gpu: "1"}}
"""


def job(name: str = "train", queue: str = "default", cpu: str = "4") -> str:
    return JOB % {"name": name, "queue": queue, "cpu": cpu}


def counts(engine: sa.Engine) -> tuple[int, int, int]:
    with engine.connect() as conn:
        return (
            conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one(),
            conn.execute(sa.text("SELECT count(*) FROM resource_bindings")).scalar_one(),
            conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one(),
        )


def test_submit_stores_a_suspended_binding_with_the_whole_request(client: Client, engine: sa.Engine) -> None:
    resp = client.submit_job(job(), request_id="r-1")
    assert resp.created
    j = resp.job
    assert (j.namespace, j.name, j.queue) == ("team-a", "train", "default")
    assert j.min_available == 4  # Volcano's default: the sum of the tasks' replicas
    # Every task counts (not only the first): 1x(2 cpu, 4Gi) + 3x(4 cpu, 1 GPU), and 4 pods.
    assert dict(j.request.quantities) == {"cpu": "14", "memory": "4Gi", "nvidia.com/gpu": "3", "pods": "4"}
    with engine.connect() as conn:
        phase, gen = conn.execute(sa.text("SELECT phase, generation FROM resource_bindings")).one()
    assert (phase, gen) == ("Suspended", 0)


def test_same_request_id_returns_the_same_job(client: Client, engine: sa.Engine) -> None:
    first = client.submit_job(job(), request_id="r-1")
    again = client.submit_job(job(), request_id="r-1")
    assert not again.created
    assert again.job.uid == first.job.uid
    assert counts(engine)[:2] == (1, 1)


def test_same_name_with_another_request_is_already_exists(client: Client, engine: sa.Engine) -> None:
    client.submit_job(job(), request_id="r-1")
    with pytest.raises(VGlobalError) as err:
        client.submit_job(job(cpu="8"), request_id="r-2")
    assert err.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert "team-a/train" in err.value.message
    assert counts(engine)[:2] == (1, 1)


BAD = [
    ("malformed yaml", "kind: Job\nspec: [unclosed", grpc.StatusCode.INVALID_ARGUMENT, ""),
    (
        "unknown kind",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: p}\n",
        grpc.StatusCode.INVALID_ARGUMENT,
        "kind",
    ),
    (
        "invalid quantity",
        job(cpu="abc"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "spec.tasks[1].template.spec.containers[0].resources.requests.cpu",
    ),
    (
        "negative replicas",
        job().replace("replicas: 3", "replicas: -1"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "spec.tasks[1].replicas",
    ),
    (
        "minAvailable above the pods",
        job().replace("queue: default", "queue: default\n  minAvailable: 9"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "spec.minAvailable",
    ),
    ("unknown queue", job(queue="nope"), grpc.StatusCode.NOT_FOUND, "spec.queue"),
    (
        "unknown priority class",
        job().replace("queue: default", "queue: default\n  priorityClassName: gold"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "spec.priorityClassName",
    ),
    (
        "unknown task priority class",
        job().replace(
            "      spec:\n        containers:",
            "      spec:\n        priorityClassName: gold\n        containers:",
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "spec.tasks[0].template.spec.priorityClassName",
    ),
    ("oversized manifest", job() + "#" + "x" * 1_100_000, grpc.StatusCode.RESOURCE_EXHAUSTED, "limit"),
]


@pytest.mark.parametrize(("case", "text", "code", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_and_changes_nothing(
    client: Client, engine: sa.Engine, case: str, text: str, code: grpc.StatusCode, field: str
) -> None:
    before = counts(engine)
    with pytest.raises(VGlobalError) as err:
        client.submit_job(text, request_id=f"bad-{case}")
    assert err.value.code == code, err.value.message
    assert field in err.value.message
    assert counts(engine) == before


def test_batch_with_one_bad_document_stores_nothing(client: Client, engine: sa.Engine) -> None:
    with pytest.raises(VGlobalError) as err:
        client.submit_jobs([(job("a"), "a"), (job("b", queue="nope"), "b")])
    assert err.value.code == grpc.StatusCode.NOT_FOUND
    assert err.value.message.startswith("jobs[1]: ")
    assert counts(engine)[:2] == (0, 0)


def test_a_batch_is_stored_as_its_submissions_one_by_one(client: Client, engine: sa.Engine) -> None:
    first = client.submit_job(job("old"), request_id="old")
    got = client.submit_jobs(
        [
            (job("a"), "a"),
            (job("old-again", queue="nope"), "old"),  # submitted before: that job, unchecked
            (job("b"), ""),
            (job("a-again"), "a"),  # earlier in this batch: that job
        ]
    ).results
    assert [(r.job.name, r.created) for r in got] == [("a", True), ("old", False), ("b", True), ("a", False)]
    assert got[1].job.uid == first.job.uid and got[3].job.uid == got[0].job.uid
    assert got[0].job.binding_phase == "Suspended" and got[0].job.queue == "default"
    assert counts(engine) == (3, 3, 3)
    with pytest.raises(VGlobalError) as err:
        client.submit_jobs([(job("c"), "c"), (job("a"), "another")])
    assert err.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert err.value.message == 'jobs[1]: job "team-a/a" already exists'
    assert counts(engine) == (3, 3, 3)


def test_get_list_cancel_delete(client: Client) -> None:
    client.submit_job(job("a"), request_id="a")
    client.submit_job(job("b"), request_id="b")
    assert [j.name for j in client.list_jobs(namespace="team-a")] == ["a", "b"]
    got = client.get_job("a", "team-a")
    assert got.binding_phase == "Suspended" and got.manifest
    cancelled = client.cancel_job("a", "team-a")
    assert (cancelled.phase, cancelled.binding_phase) == ("Aborted", "Aborted")
    client.delete_job("b", "team-a")
    with pytest.raises(VGlobalError) as err:
        client.get_job("b", "team-a")
    assert err.value.code == grpc.StatusCode.NOT_FOUND
    explain = client.explain_job("a", "team-a")
    assert [e.reason for e in explain.events] == ["Submitted", "Cancelled"]


def test_priority_class_resolves_to_its_value(client: Client) -> None:
    client.apply_priority_class(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: gold}\nvalue: 1000\n"
    )
    text = job().replace("queue: default", "queue: default\n  priorityClassName: gold")
    assert client.submit_job(text).job.priority == 1000


def test_concurrent_submits_with_one_request_id_store_one_job(client: Client, engine: sa.Engine) -> None:
    import threading

    results: list[object] = []

    def submit() -> None:
        try:
            results.append(client.submit_job(job(), request_id="same"))
        except VGlobalError as exc:
            results.append(exc)

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(not isinstance(r, VGlobalError) for r in results), results
    assert sum(r.created for r in results) == 1  # type: ignore[attr-defined]
    assert len({r.job.uid for r in results}) == 1  # type: ignore[attr-defined]
    assert counts(engine)[:2] == (1, 1)


def test_a_job_the_dispatcher_has_not_looked_at_says_so(follower: tuple[Hub, sa.Engine]) -> None:
    """Another replica leads and has not run a cycle since: the job waits with no reason stored,
    and ExplainJob says what that means instead of an empty reason."""
    from vglobal.hub.servicers.jobs import NOT_EXPLAINED_YET

    with Client(f"127.0.0.1:{follower[0].port}", timeout=10, retries=1) as client:
        client.submit_job(job("quiet"))
        explained = client.explain_job("quiet", "team-a")
    assert (explained.decision, explained.reason) == ("Waiting", NOT_EXPLAINED_YET)
    assert (explained.reason_kind, explained.job.reason_kind) == ("Unexamined", "")
