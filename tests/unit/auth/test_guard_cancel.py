"""A stream its caller cancels (an SDK watch closed, a CLI stopped) ends quietly at the guard: what
fails in the handler after the cancel (a write to the closed stream) logs no ERROR and no traceback,
while the same failure on a live stream is still an internal error (real aio server, no database)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest

from vglobal.api.v1 import jobs_pb2
from vglobal.hub.auth.authenticator import Authenticator
from vglobal.hub.grpc_server import LoopServer
from vglobal.hub.guard import Guard

WATCH = "/vglobal.v1.JobService/WatchJobs"


class Watches:
    def __init__(self) -> None:
        self.ended = threading.Event()

    async def watch(self, request: jobs_pb2.WatchJobsRequest, context: Any) -> AsyncIterator[jobs_pb2.JobEvent]:
        try:
            yield jobs_pb2.JobEvent(type=jobs_pb2.JobEvent.BOOKMARK, revision=1)
            if request.name == "fail":  # a bug while the caller still listens
                raise ZeroDivisionError("a bug")
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                # What a write after the caller's cancel raises in gRPC (ExecuteBatchError), here at once.
                raise RuntimeError("Failed 'execute_batch': the call is closed") from None
        finally:
            self.ended.set()


@pytest.fixture
def served() -> Iterator[tuple[str, Watches, LoopServer]]:
    watches = Watches()
    server = LoopServer(workers=2, interceptors=[Guard(Authenticator(None), None)])
    handler = grpc.unary_stream_rpc_method_handler(
        watches.watch, jobs_pb2.WatchJobsRequest.FromString, jobs_pb2.JobEvent.SerializeToString
    )
    server.server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("vglobal.v1.JobService", {"WatchJobs": handler}),)
    )
    port = server.add_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", watches, server
    server.stop(0.5)


def test_a_watch_its_caller_cancels_logs_no_error(
    served: tuple[str, Watches, LoopServer], caplog: pytest.LogCaptureFixture
) -> None:
    target, watches, server = served
    caplog.set_level(logging.DEBUG)
    with grpc.insecure_channel(target) as ch:
        call = ch.unary_stream(WATCH)(jobs_pb2.WatchJobsRequest().SerializeToString(), timeout=30)
        next(call)
        call.cancel()
    assert watches.ended.wait(10)
    server.stop(5)  # waits for the call's task: the guard has handled what the handler raised
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_a_bug_on_a_live_watch_is_still_internal(served: tuple[str, Watches, LoopServer]) -> None:
    target, _, _ = served
    with grpc.insecure_channel(target) as ch:
        call = ch.unary_stream(WATCH)(jobs_pb2.WatchJobsRequest(name="fail").SerializeToString(), timeout=30)
        next(call)
        with pytest.raises(grpc.RpcError) as err:
            next(call)
    assert err.value.code() == grpc.StatusCode.INTERNAL
