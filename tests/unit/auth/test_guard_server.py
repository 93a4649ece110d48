"""The guarded aio server on its own loop, with only the probes and one toy guarded method: health
List, reflection v1 beside v1alpha, undecodable requests, credentials and rate limits (no database)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from tests.unit.auth.test_auth_config import ALICE, OPS, config_text
from vglobal.api.v1 import jobs_pb2, queues_pb2
from vglobal.client import Client
from vglobal.hub import guard as guard_module
from vglobal.hub.auth.access import current_principal
from vglobal.hub.auth.authenticator import Authenticator
from vglobal.hub.auth.ratelimit import RateLimiter
from vglobal.hub.grpc_server import LoopServer
from vglobal.hub.guard import RETRY_AFTER, Guard, InFlight
from vglobal.hub.probes import HealthServicer, add_reflection

LIST = "/vglobal.v1.QueueService/ListQueues"
GET = "/vglobal.v1.QueueService/GetQueue"


def _list(request: queues_pb2.ListQueuesRequest, context: Any) -> queues_pb2.ListQueuesResponse:
    return queues_pb2.ListQueuesResponse(queues=[queues_pb2.Queue(name=current_principal().name)])


SUBMITTED: list[str] = []  # what _submit stored, in order


def _submit(request: jobs_pb2.SubmitJobRequest, context: Any) -> jobs_pb2.SubmitJobResponse:
    SUBMITTED.append(request.manifest)
    return jobs_pb2.SubmitJobResponse(created=True)


def _get(request: queues_pb2.QueueRef, context: Any) -> queues_pb2.Queue:
    raise ZeroDivisionError("a bug with a secret in its message")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, HealthServicer]]:
    with serving(tmp_path, RateLimiter(rate=0.001, burst=3)) as out:
        yield out


@contextlib.contextmanager
def serving(
    tmp_path: Path,
    limiter: RateLimiter,
    *,
    in_flight: InFlight | None = None,
    get: Callable[..., Any] = _get,
) -> Iterator[tuple[str, HealthServicer]]:
    path = tmp_path / "auth.yaml"
    path.write_text(config_text())
    guard = Guard(Authenticator(path), limiter, in_flight=in_flight)
    server = LoopServer(workers=4, interceptors=[guard])
    health = server.run(_make_health())
    health_pb2_grpc.add_HealthServicer_to_server(health, server.server)
    add_reflection(server.server, ["vglobal.v1.QueueService"])
    handlers = {
        "ListQueues": grpc.unary_unary_rpc_method_handler(
            _list, queues_pb2.ListQueuesRequest.FromString, queues_pb2.ListQueuesResponse.SerializeToString
        ),
        "GetQueue": grpc.unary_unary_rpc_method_handler(
            get, queues_pb2.QueueRef.FromString, queues_pb2.Queue.SerializeToString
        ),
    }
    submit = grpc.unary_unary_rpc_method_handler(
        _submit, jobs_pb2.SubmitJobRequest.FromString, jobs_pb2.SubmitJobResponse.SerializeToString
    )
    server.server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler("vglobal.v1.QueueService", handlers),
            grpc.method_handlers_generic_handler("vglobal.v1.JobService", {"SubmitJob": submit}),
        )
    )
    port = server.add_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", health
    finally:
        server.stop(0.5)


async def _make_health() -> HealthServicer:
    return HealthServicer()


def _call(target: str, method: str, payload: bytes, token: str | None = None) -> Any:
    with grpc.insecure_channel(target) as ch:
        call = ch.unary_unary(method)
        metadata = [("authorization", f"Bearer {token}")] if token else None
        return call.with_call(payload, timeout=5, metadata=metadata)


def test_health_list_and_check_need_no_token(served: tuple[str, HealthServicer]) -> None:
    target, _ = served
    with grpc.insecure_channel(target) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        listed = stub.List(health_pb2.HealthListRequest(), timeout=5)
        assert listed.statuses[""].status == health_pb2.HealthCheckResponse.SERVING
        assert (
            stub.Check(health_pb2.HealthCheckRequest(), timeout=5).status
            == health_pb2.HealthCheckResponse.SERVING
        )


def test_reflection_v1_beside_v1alpha(served: tuple[str, HealthServicer]) -> None:
    target, _ = served
    with grpc.insecure_channel(target) as ch:
        for version in ("v1", "v1alpha"):
            stream = ch.stream_stream(
                f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
            )
            requests = [
                reflection_pb2.ServerReflectionRequest(list_services=""),
                reflection_pb2.ServerReflectionRequest(
                    file_containing_symbol="grpc.reflection.v1.ServerReflection"
                ),
            ]
            listed, described = list(stream(iter(requests), timeout=5))
            names = {s.name for s in listed.list_services_response.service}
            assert {
                "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection",
            } <= names
            assert described.file_descriptor_response.file_descriptor_proto, version


def test_undecodable_requests_are_invalid_argument(served: tuple[str, HealthServicer]) -> None:
    target, _ = served
    for method in (LIST, "/grpc.health.v1.Health/Check"):
        with pytest.raises(grpc.RpcError) as err:
            _call(target, method, b"\x0a\xff", ALICE)  # field 1, length 255, then nothing: truncated
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, method
        assert "request: not a valid" in (err.value.details() or "")


def test_credentials_are_checked_and_the_principal_reaches_the_handler(
    served: tuple[str, HealthServicer],
) -> None:
    target, _ = served
    with pytest.raises(grpc.RpcError) as err:
        _call(target, LIST, b"")
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as err:
        _call(target, LIST, b"", "wrong")
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    raw, _ = _call(target, LIST, b"", OPS)
    assert queues_pb2.ListQueuesResponse.FromString(raw).queues[0].name == "olga"


def test_a_bug_is_internal_without_its_message(served: tuple[str, HealthServicer]) -> None:
    target, _ = served
    with pytest.raises(grpc.RpcError) as err:
        _call(target, GET, b"", OPS)
    assert err.value.code() == grpc.StatusCode.INTERNAL
    assert "secret" not in (err.value.details() or "") and "reference" in (err.value.details() or "")


def test_over_the_rate_is_resource_exhausted_with_a_retry_delay(served: tuple[str, HealthServicer]) -> None:
    target, _ = served
    for _ in range(3):
        _call(target, LIST, b"", ALICE)
    with pytest.raises(grpc.RpcError) as err:
        _call(target, LIST, b"", ALICE)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    trailers = dict(err.value.trailing_metadata() or ())
    assert int(trailers[RETRY_AFTER]) > 0
    _call(target, LIST, b"", OPS)  # another principal has a bucket of its own
    with grpc.insecure_channel(target) as ch:  # health is never limited
        for _ in range(10):
            health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)


def test_the_sdk_waits_the_delay_a_rate_limit_tells_then_succeeds(tmp_path: Path) -> None:
    """A call every 2 s, a burst of one: the next call is refused with a delay of about 2 s, and the
    SDK's one retry waits that long (its own back-off, 0.2-1.2 s, would be refused again)."""
    with serving(tmp_path, RateLimiter(rate=0.5, burst=1)) as (target, _), Client(
        target, token=ALICE, retries=2
    ) as client:
        client.list_queues()
        with pytest.raises(grpc.RpcError) as refused:
            _call(target, LIST, b"", ALICE)
        told = int(dict(refused.value.trailing_metadata() or ())[RETRY_AFTER]) / 1000
        assert 1.5 < told <= 2.0
        start = time.monotonic()
        assert [q.name for q in client.list_queues()] == ["alice"]
        assert time.monotonic() - start >= told * 0.9


def test_a_submit_refused_unread_is_sent_again_though_it_is_not_idempotent(tmp_path: Path) -> None:
    """A SubmitJob without a request_id is never sent twice after an error it may have been stored
    by; a refusal over the rate was not read at all, so the SDK sends it again after the delay told,
    and it is stored once."""
    SUBMITTED.clear()
    with serving(tmp_path, RateLimiter(rate=0.5, burst=1)) as (target, _), Client(
        target, token=ALICE, retries=2
    ) as client:
        client.submit_job("first")
        assert client.submit_job("second").created  # refused, waited about 2 s, sent again
    assert SUBMITTED == ["first", "second"]


def test_a_caller_with_too_many_calls_in_progress_is_refused_before_its_request_is_parsed(
    tmp_path: Path,
) -> None:
    """One call at a time per caller: a second while the first is held is RESOURCE_EXHAUSTED with
    a retry delay, without being parsed (a request that does not even decode is refused so);
    another caller is served meanwhile, and the first caller's next call once its first ended."""
    entered, release = threading.Event(), threading.Event()

    def held(request: queues_pb2.QueueRef, context: Any) -> queues_pb2.Queue:
        entered.set()
        release.wait(10)
        return queues_pb2.Queue(name=current_principal().name)

    limiter = RateLimiter(rate=1000, burst=1000)
    with serving(tmp_path, limiter, in_flight=InFlight(1), get=held) as (target, _):
        with futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(_call, target, GET, b"", ALICE)
            assert entered.wait(10)
            with pytest.raises(grpc.RpcError) as err:
                _call(target, GET, b"\x0a\xff", ALICE)  # undecodable: the limit answers first
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "calls in progress" in (err.value.details() or "")
            assert int(dict(err.value.trailing_metadata() or ())[RETRY_AFTER]) > 0
            _call(target, LIST, b"", OPS)  # another caller
            release.set()
            raw, _ = first.result(10)
        assert queues_pb2.Queue.FromString(raw).name == "alice"
        raw, _ = _call(target, GET, b"", ALICE)
        assert queues_pb2.Queue.FromString(raw).name == "alice"


def test_a_coroutine_call_over_its_rate_is_answered_late_with_its_delay_shortened_as_much(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller that resends at once cannot spin on refusals: the refusal comes HOLD late, and the
    delay it tells is what is left of the wait."""
    monkeypatch.setattr(guard_module, "HOLD", 0.3)
    monkeypatch.setattr(guard_module, "HOLD_SPREAD", 0.0)

    async def get(request: queues_pb2.QueueRef, context: Any) -> queues_pb2.Queue:
        return queues_pb2.Queue(name=current_principal().name)

    with serving(tmp_path, RateLimiter(rate=0.5, burst=1), get=get) as (target, _):
        _call(target, GET, b"", ALICE)
        start = time.monotonic()
        with pytest.raises(grpc.RpcError) as err:
            _call(target, GET, b"", ALICE)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert time.monotonic() - start >= 0.3
        told = int(dict(err.value.trailing_metadata() or ())[RETRY_AFTER]) / 1000
        assert 1.2 < told <= 1.71


def test_refusals_are_held_for_spread_times_around_the_hold() -> None:
    """Calls refused together come back apart: a caller resending each at once is no burst."""
    held = [guard_module.hold_time() for _ in range(400)]
    low, high = guard_module.HOLD * (1 - guard_module.HOLD_SPREAD), guard_module.HOLD * (1 + guard_module.HOLD_SPREAD)
    assert all(low <= h <= high for h in held)
    # Drawn across the whole span, not a few values: a tenth of it holds at most a fifth of them.
    tenths = [sum(low + k * (high - low) / 10 <= h < low + (k + 1) * (high - low) / 10 for h in held) for k in range(10)]
    assert max(tenths) < len(held) / 5


def test_a_caller_with_more_calls_held_has_each_held_longer_so_its_refusals_keep_a_rate() -> None:
    """However many refused calls a caller keeps held, they are answered at about HELD_RATE a second;
    a caller with few (the SDK's) is held HOLD as before."""
    middle = lambda low, high: (low + high) / 2  # noqa: E731
    assert guard_module.hold_time(1, middle) == guard_module.HOLD
    assert guard_module.hold_time(64, middle) == pytest.approx(64 / guard_module.HELD_RATE)
    # Bounded, and by half the call's time left: the caller is told to retry before its deadline.
    assert guard_module.hold_time(10_000, middle) == guard_module.MAX_HOLD
    assert guard_module.hold_time(64, middle, left=3.0) == pytest.approx(1.5)
    assert guard_module.hold_time(1, middle, left=1.0) == pytest.approx(0.5)


def test_the_guard_counts_each_callers_held_calls_while_they_are_held(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard_module, "HOLD", 0.01)
    monkeypatch.setattr(guard_module, "HELD_RATE", 100.0)
    monkeypatch.setattr(guard_module, "HOLD_SPREAD", 0.0)
    guard = Guard(Authenticator(None), None)

    async def hold_four() -> list[float]:
        return list(await asyncio.gather(*(guard.hold(k) for k in ("a", "a", "a", "b"))))

    assert asyncio.run(hold_four()) == pytest.approx([0.01, 0.02, 0.03, 0.01])  # "b" counted apart
    assert guard.held == {}
