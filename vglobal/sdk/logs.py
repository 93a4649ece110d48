"""A job's pod output (JobService.StreamLogs) as an iterator of lines, for Client and AsyncClient.

A followed stream that breaks (UNAVAILABLE: the hub restarted, the agent reconnects, the call
reached a replica without the agent's stream) is called again from its last line's time for up
to two minutes (log_resume.py), without repeating or losing a line; then the error is raised.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any, NamedTuple

import grpc

from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.sdk.errors import hub_error
from vglobal.sdk.log_resume import Resume


class LogLine(NamedTuple):
    pod: str
    text: str


def logs_request(
    name: str,
    namespace: str = "default",
    *,
    pod: str = "",
    task: str = "",
    container: str = "",
    follow: bool = False,
    tail: int | None = None,
    since: timedelta | float | None = None,
    previous: bool = False,
    timestamps: bool = False,
) -> jobs_pb2.LogsRequest:
    seconds = since.total_seconds() if isinstance(since, timedelta) else since
    return jobs_pb2.LogsRequest(
        job=jobs_pb2.JobRef(name=name, namespace=namespace),
        pod=pod,
        task=task,
        container=container,
        follow=follow,
        tail_lines=tail or 0,
        since_seconds=int(-(-seconds // 1)) if seconds else 0,
        previous=previous,
        timestamps=timestamps,
    )


def _lines(msg: jobs_pb2.LogLines, resume: Resume | None) -> Iterator[LogLine]:
    for text in msg.lines if resume is None else resume.lines(msg.pod, msg.lines):
        yield LogLine(msg.pod, text)


class LogStream:
    """Lines of ``Client.logs`` as they come; ``close()`` (from any thread) ends it."""

    def __init__(self, stub: jobs_pb2_grpc.JobServiceStub, request: jobs_pb2.LogsRequest) -> None:
        self._stub = stub
        self._request = request
        self._call: Any = None
        self._closed = threading.Event()
        self._lines = self._run()

    def __iter__(self) -> LogStream:
        return self

    def __next__(self) -> LogLine:
        return next(self._lines)

    def __enter__(self) -> LogStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        if self._call is not None:
            self._call.cancel()

    def _run(self) -> Iterator[LogLine]:
        if not self._request.follow:
            yield from self._once(self._request, None)
            return
        resume = Resume(self._request)
        while not self._closed.is_set():
            try:
                yield from self._once(resume.request(), resume)
                return
            except grpc.RpcError as exc:
                wait = None if self._closed.is_set() else resume.retry(exc.code())
                if wait is None:
                    if self._closed.is_set():
                        return
                    raise hub_error(exc) from None
                self._closed.wait(wait)

    def _once(self, request: jobs_pb2.LogsRequest, resume: Resume | None) -> Iterator[LogLine]:
        """One call's lines; its RpcError is raised (a followed stream resumes on some)."""
        self._call = self._stub.StreamLogs(request)
        if self._closed.is_set():
            self._call.cancel()
        try:
            for msg in self._call:
                yield from _lines(msg, resume)
        except grpc.RpcError as exc:
            if resume is not None:
                raise
            if not self._closed.is_set():
                raise hub_error(exc) from None
        finally:
            self._call.cancel()


async def stream_lines(
    stub: jobs_pb2_grpc.JobServiceStub, request: jobs_pb2.LogsRequest, metadata: Any
) -> AsyncIterator[LogLine]:
    resume = Resume(request) if request.follow else None
    while True:
        call: Any = stub.StreamLogs(request if resume is None else resume.request(), metadata=metadata)
        try:
            async for msg in call:
                for line in _lines(msg, resume):
                    yield line
            return
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.CANCELLED:
                return
            wait = None if resume is None else resume.retry(exc.code())
            if wait is None:
                raise hub_error(exc) from None
        finally:
            call.cancel()
        await asyncio.sleep(wait)
