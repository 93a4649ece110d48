"""``Client.watch_jobs``'s iterator: one stream of job events, opened again where it broke."""

from __future__ import annotations

import enum
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.sdk.errors import hub_error
from vglobal.sdk.retries import hopeless, retry_after

__all__ = ["EventType", "JobEvent", "JobWatch"]


# A watch stream broken by these is opened again from the last revision it delivered.
_WATCH_RESUMABLE = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,  # fell behind, or the hub serves too many watches
    grpc.StatusCode.CANCELLED,  # the hub stopped
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
)



class EventType(enum.IntEnum):
    """A watch event's type. Equal to the API's numbers (``jobs_pb2.JobEvent.ADDED`` ...), printed
    as its name: ``print(event.type)`` shows ADDED, MODIFIED, DELETED or BOOKMARK."""

    TYPE_UNSPECIFIED = jobs_pb2.JobEvent.TYPE_UNSPECIFIED
    ADDED = jobs_pb2.JobEvent.ADDED
    MODIFIED = jobs_pb2.JobEvent.MODIFIED
    DELETED = jobs_pb2.JobEvent.DELETED
    BOOKMARK = jobs_pb2.JobEvent.BOOKMARK

    def __str__(self) -> str:
        return self.name

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One change of a watched job: the API's ``JobEvent`` with its type as an ``EventType``."""

    type: EventType
    revision: int
    job: jobs_pb2.Job  # as the change left it, without manifest and pod placements
    time: Timestamp  # when the change was made

    @classmethod
    def of(cls, msg: jobs_pb2.JobEvent) -> JobEvent:
        return cls(EventType(msg.type), msg.revision, msg.job, msg.time)


class JobWatch:
    """An iterator of job events from ``Client.watch_jobs``; ``revision`` is the last one seen."""

    def __init__(
        self,
        stub: jobs_pb2_grpc.JobServiceStub,
        request: jobs_pb2.WatchJobsRequest,
        *,
        reconnect: bool,
        bookmarks: bool,
    ) -> None:
        self._stub = stub
        self._request = request
        self._reconnect = reconnect
        self._bookmarks = bookmarks
        self.revision = request.from_revision
        # Watching "from now" has no position until the stream's first bookmark gives one; from
        # then on a reconnect resumes after it, even when it is revision 0.
        self._known = request.HasField("from_revision")
        self._call: Any = None
        self._closed = threading.Event()
        self._events = self._run()

    def __iter__(self) -> JobWatch:
        return self

    def __next__(self) -> JobEvent:
        return next(self._events)

    def __enter__(self) -> JobWatch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed.set()
        if self._call is not None:
            self._call.cancel()

    def _run(self) -> Iterator[JobEvent]:
        failures = 0
        while not self._closed.is_set():
            if self._known:
                self._request.from_revision = self.revision
            try:
                self._call = self._stub.WatchJobs(self._request)
            except ValueError:  # the client was closed: nothing more to watch
                return
            told: float | None = None
            try:
                for event in self._call:
                    failures = 0
                    self.revision, self._known = event.revision, True
                    if event.type != jobs_pb2.JobEvent.BOOKMARK or self._bookmarks:
                        yield JobEvent.of(event)
            except grpc.RpcError as exc:
                if self._closed.is_set():
                    return
                if not self._reconnect or exc.code() not in _WATCH_RESUMABLE or hopeless(exc):
                    raise hub_error(exc) from None
                told = retry_after(exc)  # rate limited: the hub says when to come back
            finally:
                self._call.cancel()
            if not self._reconnect:
                return
            failures += 1
            backoff = min(5.0, 0.1 * 2 ** min(failures, 6)) * random.uniform(0.5, 1.0)
            self._closed.wait(min(told, 10.0) if told is not None else backoff)
