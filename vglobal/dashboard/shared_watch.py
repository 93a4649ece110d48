"""One hub watch per caller (a session, or a bearer token), shared by every live page it has open.

A caller with thirty tabs holds one of the hub's watches, not thirty. The shared watch follows
every job the caller may read, from the moment it starts; each page's stream keeps the events its
own filters match. A page rendered at a revision older than where the shared watch began is told
"changed" at once (it fetches its part again, which is as good as replaying what it missed).
The watch ends when its last page has been gone LINGER seconds, on logout, and when the hub ends
it (the caller's token revoked, the hub stopping): every page then hears why.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable

import grpc

from vglobal.api.v1 import jobs_pb2
from vglobal.dashboard.gateway import Gateway
from vglobal.sdk import VGlobalError

LINGER = 10.0  # seconds a watch without pages stays open (a page being reloaded comes back)
RETRY_BUSY = 5.0  # seconds a page waits after the hub had no watch for its caller


class Filter:
    """What one page follows: the WatchJobs fields it would have asked for itself."""

    def __init__(self, request: jobs_pb2.WatchJobsRequest) -> None:
        self.queue, self.namespace, self.name = request.queue, request.namespace, request.name
        self.labels = dict(request.labels)

    def matches(self, job: jobs_pb2.Job) -> bool:
        if self.queue and job.queue != self.queue:
            return False
        if self.namespace and (job.namespace or "default") != self.namespace:
            return False
        if self.name and job.name != self.name:
            return False
        return all(job.labels.get(k) == v for k, v in self.labels.items())


class Page:
    """One page's share: ``pending`` set when a matching change came, or when the watch ended."""

    def __init__(self, want: Filter, since: int | None) -> None:
        self.want, self.since = want, since
        self.pending = asyncio.Event()
        self.ready = asyncio.Event()
        self.revision = since or 0
        self.gone: str | None = None  # why the watch ended
        self.retry: float | None = None  # when to ask again, if the hub said


class Shared:
    def __init__(self, owner: SharedWatches, key: str, token: str | None) -> None:
        self.owner, self.key, self.token = owner, key, token
        self.pages: set[Page] = set()
        self.start: int | None = None  # the revision the watch began at
        self.revision = 0
        self.ended = False
        self.gone_reason = "the stream was closed"
        self.idle: asyncio.TimerHandle | None = None
        self.task = asyncio.create_task(self._pump())
        # A watch ended before its first step never runs _pump: its pages must still hear why.
        self.task.add_done_callback(lambda _t: None if self.ended else self._finish(self.gone_reason, None))

    def join(self, page: Page) -> None:
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None
        self.pages.add(page)
        if self.start is not None:
            self._welcome(page)

    def leave(self, page: Page) -> None:
        self.pages.discard(page)
        if not self.pages and not self.ended:
            self.idle = asyncio.get_running_loop().call_later(LINGER, self._linger_over)

    def _linger_over(self) -> None:
        if not self.pages:
            self.end("no page follows it")

    def _welcome(self, page: Page) -> None:
        page.revision = max(page.revision, self.revision)
        page.ready.set()
        if page.since is not None and self.start is not None and page.since < self.start:
            page.pending.set()  # what happened since the page was made is not replayed: fetch again

    async def _pump(self) -> None:
        gone, retry = "the hub ended the watch: reconnecting", None
        try:
            async for event in self.owner.gateway.watch(jobs_pb2.WatchJobsRequest(), self.token):
                self.revision = event.revision
                if self.start is None:
                    self.start = event.revision
                    for page in self.pages:
                        self._welcome(page)
                for page in self.pages:
                    page.revision = event.revision
                    if event.type != jobs_pb2.JobEvent.BOOKMARK and page.want.matches(event.job):
                        page.pending.set()
        except VGlobalError as exc:
            gone = exc.message
            if exc.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                retry = RETRY_BUSY
            if exc.code == grpc.StatusCode.UNAUTHENTICATED and self.owner.revoked is not None:
                self.owner.revoked(self.key)
        except asyncio.CancelledError:
            gone = self.gone_reason
        self._finish(gone, retry)

    def _finish(self, gone: str, retry: float | None) -> None:
        self.ended = True
        self.owner.forget(self)
        for page in self.pages:
            page.gone, page.retry = gone, retry
            page.pending.set()
            page.ready.set()

    def end(self, reason: str) -> None:
        if self.ended:
            return
        self.gone_reason = reason
        self.task.cancel()
        if self.idle is not None:
            self.idle.cancel()


class SharedWatches:
    """The shared watches by caller; ``revoked(key)`` is told when the hub no longer knows one."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._by_key: dict[str, Shared] = {}
        self.revoked: Callable[[str], None] | None = None

    @staticmethod
    def key(session_id: str | None, token: str | None) -> str:
        if session_id is not None:
            return "session:" + session_id
        return "bearer:" + hashlib.sha256((token or "").encode()).hexdigest()

    def follow(self, key: str, token: str | None, page: Page) -> Shared:
        shared = self._by_key.get(key)
        if shared is None or shared.ended:
            shared = self._by_key[key] = Shared(self, key, token)
        shared.join(page)
        return shared

    def forget(self, shared: Shared) -> None:
        if self._by_key.get(shared.key) is shared:
            del self._by_key[shared.key]

    def end(self, key: str, reason: str) -> None:
        shared = self._by_key.get(key)
        if shared is not None:
            shared.end(reason)

    async def close(self) -> None:
        for shared in list(self._by_key.values()):
            shared.end("the dashboard is stopping")
            with contextlib.suppress(asyncio.CancelledError):
                await shared.task
