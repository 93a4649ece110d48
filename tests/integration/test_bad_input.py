"""Each bad input an outside client sent gets the right status naming the field, stores nothing, and
never INTERNAL; status messages stay under 4 KiB; limits hold."""

from __future__ import annotations

import grpc
import pytest
import sqlalchemy as sa

from vglobal.api.v1 import jobs_pb2, queues_pb2
from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub

TASK = '{{name: t{i}, replicas: 1, template: {{spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]}}}}}}'


def job(name: str = "j", replicas: str = "1", tasks: str = "") -> str:
    tasks = tasks or TASK.format(i=0).replace("replicas: 1", f"replicas: {replicas}")
    return f"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n  tasks: [{tasks}]\n"


def stored_jobs(engine: sa.Engine) -> int:
    with engine.connect() as c:
        return int(c.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one())


def raw_call(hub: Hub, method: str, payload: bytes) -> grpc.RpcError:
    with grpc.insecure_channel(f"127.0.0.1:{hub.port}") as ch, pytest.raises(grpc.RpcError) as err:
        ch.unary_unary(method)(payload, timeout=10)
    return err.value


def test_replicas_beyond_32_bits_is_invalid_argument(client: Client, engine: sa.Engine) -> None:
    with pytest.raises(VGlobalError) as err:
        client.submit_job(job(replicas="2147483648"))
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "spec.tasks[0].replicas: must be at most 2147483647" in err.value.message
    assert stored_jobs(engine) == 0


def test_json_nested_100000_deep_is_invalid_argument(client: Client, engine: sa.Engine) -> None:
    deep = (
        '{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "x": '
        + ("[" * 100_000 + "]" * 100_000)
        + "}}"
    )
    with pytest.raises(VGlobalError) as err:
        client.submit_job(deep)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "nests deeper" in err.value.message
    assert stored_jobs(engine) == 0


def test_invalid_utf8_and_truncated_protobuf_are_invalid_argument(hub: Hub, engine: sa.Engine) -> None:
    manifest = b"kind: Job\nname: \xff\xfe"
    utf8 = bytes([0x0A, len(manifest)]) + manifest  # field 1 (manifest), a string that is not UTF-8
    truncated = jobs_pb2.SubmitJobRequest(manifest=job()).SerializeToString()[:-7]
    for payload in (utf8, truncated):
        err = raw_call(hub, "/vglobal.v1.JobService/SubmitJob", payload)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "request: not a valid vglobal.v1.SubmitJobRequest" in (err.details() or "")
    assert stored_jobs(engine) == 0


def test_a_nul_character_is_invalid_argument_naming_the_field(hub: Hub, engine: sa.Engine) -> None:
    """PostgreSQL cannot store NUL: refused wherever it is, also beside zero bytes that are no NUL
    (a page size of 0 in a list call, an empty map value), and the clean call beside it passes."""
    nul = job().replace("name: j", "name: j\x00k")
    batch = jobs_pb2.SubmitJobsRequest(
        jobs=[jobs_pb2.SubmitJobRequest(manifest=job("ok")), jobs_pb2.SubmitJobRequest(manifest=nul)]
    )
    err = raw_call(hub, "/vglobal.v1.JobService/SubmitJobs", batch.SerializeToString())
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "jobs[1].manifest: contains the NUL character" in (err.details() or "")
    listing = jobs_pb2.ListJobsRequest(labels={"a": "", "b\x00": "x"})
    assert b"\x00" in listing.SerializeToString().replace(b"b\x00", b"")  # a zero byte besides the NUL
    err = raw_call(hub, "/vglobal.v1.JobService/ListJobs", listing.SerializeToString())
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "labels['b\\x00']: contains the NUL character" in (err.details() or "")
    assert stored_jobs(engine) == 0
    with grpc.insecure_channel(f"127.0.0.1:{hub.port}") as ch:
        ok = jobs_pb2.ListJobsRequest(labels={"a": ""}).SerializeToString()
        got = ch.unary_unary("/vglobal.v1.JobService/ListJobs")(ok, timeout=10)
    assert jobs_pb2.ListJobsResponse.FromString(got).jobs == []


def test_bad_paging_is_invalid_argument(client: Client) -> None:
    client.submit_job(job("a"))
    for request, field in [
        (jobs_pb2.ListJobsRequest(page_size=-5), "page_size"),
        (jobs_pb2.ListJobsRequest(page_token="garbage"), "page_token"),
        (jobs_pb2.ListJobsRequest(page_token="default/a"), "page_token"),
    ]:
        with pytest.raises(VGlobalError) as err:
            client._call(client.jobs.ListJobs, request)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and field in err.value.message
    # A token the hub handed out works.
    client.submit_job(job("b"))
    first = client._call(client.jobs.ListJobs, jobs_pb2.ListJobsRequest(page_size=1))
    rest = client._call(
        client.jobs.ListJobs, jobs_pb2.ListJobsRequest(page_size=1, page_token=first.next_page_token)
    )
    assert [j.name for j in [*first.jobs, *rest.jobs]] == ["a", "b"]


def test_ten_thousand_bad_tasks_give_one_short_error(hub: Hub, engine: sa.Engine) -> None:
    tasks = ", ".join(f"{{name: t{i}, replicas: 1, template: {{spec: {{}}}}}}" for i in range(10_000))
    # What is checked is the error's size, not the time 10,000 problems take on a loaded machine.
    with (
        Client(f"127.0.0.1:{hub.port}", timeout=120, retries=1) as client,
        pytest.raises(VGlobalError) as err,
    ):
        client.submit_job(job(tasks=tasks))
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert len(err.value.message.encode()) < 4096 and "and 9980 more" in err.value.message
    assert stored_jobs(engine) == 0


def test_a_valid_job_over_the_limits_is_resource_exhausted(client: Client, engine: sa.Engine) -> None:
    many = ", ".join(TASK.format(i=i) for i in range(1001))
    with pytest.raises(VGlobalError) as err:
        client.submit_job(job(tasks=many))
    assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "spec.tasks" in err.value.message and "1000" in err.value.message
    with pytest.raises(VGlobalError) as err:
        client.submit_job(job(replicas="20001"))
    assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "20000" in err.value.message
    assert stored_jobs(engine) == 0


def test_delete_queue_with_finished_jobs_needs_force(client: Client, engine: sa.Engine) -> None:
    client.apply_queue(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: old}\nspec: {weight: 1}\n"
    )
    client.submit_job(job("f1").replace("spec:\n", "spec:\n  queue: old\n"))
    client.cancel_job("f1")  # finished (Aborted): history only
    with pytest.raises(VGlobalError) as err:
        client.delete_queue("old")
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION and "force" in err.value.message
    assert stored_jobs(engine) == 1
    resp = client._call(client.queues.DeleteQueue, queues_pb2.DeleteQueueRequest(name="old", force=True))
    assert resp.deleted_jobs == 1
    assert stored_jobs(engine) == 0


def test_timestamps_out_of_range_are_invalid_argument_naming_the_field(hub: Hub) -> None:
    """Found by the fuzz test: a Timestamp beyond what it may hold was a ValueError (INTERNAL)."""
    from google.protobuf.timestamp_pb2 import Timestamp

    huge = jobs_pb2.ListJobsRequest(created_before=Timestamp(seconds=9_223_372_036_854_775_807))
    err = raw_call(hub, "/vglobal.v1.JobService/ListJobs", huge.SerializeToString())
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "created_before" in (err.details() or "")
    negative = jobs_pb2.CountJobsRequest(created_after=Timestamp(seconds=-1, nanos=-1))
    err = raw_call(hub, "/vglobal.v1.JobService/CountJobs", negative.SerializeToString())
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "created_after" in (err.details() or "")
    since = queues_pb2.QueueHistoryRequest(since=Timestamp(seconds=730, nanos=-1))
    err = raw_call(hub, "/vglobal.v1.QueueService/GetQueueHistory", since.SerializeToString())
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "since" in (err.details() or "")
