"""WatchJobs on the asyncio server: the blocking stream (stream.watch) runs in a thread of the
watch pool, one step at a time, while the coroutine hands its events to gRPC.

A stream that gRPC cannot send (the client does not read) stops asking for the next step, so its
place in the feed stays behind and the feed cuts it off: memory stays bounded. The caller sees only
the jobs of the queues it may read, and the stream ends when the caller loses that right: after
an auth reload, and every RECHECK_EVERY seconds, the stream identifies its caller again.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from vglobal import convert
from vglobal.api.v1 import jobs_pb2
from vglobal.hub.auth.access import current_principal, current_recheck, require
from vglobal.hub.auth.authenticator import Authenticator, PermissionDenied
from vglobal.hub.auth.policy import Action, Principal, everywhere, may
from vglobal.hub.context import HubContext
from vglobal.hub.errors import Coded, HubError
from vglobal.hub.guard import peer_host
from vglobal.hub.watch.feed import WatchFeed
from vglobal.hub.watch.stream import Bookmark, WatchItem, WatchLimit, watch
from vglobal.model.records import JobChange
from vglobal.store.engine import session_scope
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.job_changes import Filters

_END = object()
RECHECK_EVERY = 60.0  # seconds between a long stream's checks of its caller, reloads aside


class _Steps:
    """One stream's generator, stepped from pool threads; ``close`` waits for a running step."""

    def __init__(self, items: Generator[WatchItem, None, None]) -> None:
        self._items = items
        self._lock = threading.Lock()

    def next(self) -> WatchItem | object:
        with self._lock:
            return next(self._items, _END)

    def close(self) -> None:
        with self._lock:
            self._items.close()


def readable_queues(ctx: HubContext, principal: Principal) -> frozenset[str] | None:
    """The queues whose jobs ``principal`` may read (None: all). A queue made while the watch runs
    is not among them: the client sees its jobs once it watches again."""
    if everywhere(principal, Action.read_jobs):
        return None
    with session_scope(ctx.sessions) as session:
        names = [q.name for q in queues_repo.list_queues(session=session)]
    return frozenset(q for q in names if may(principal, Action.read_jobs, queue=q))


class Rights:
    """A stream's caller, identified again when the auth config changed or RECHECK_EVERY passed;
    ``lost`` holds the refusal once it may no longer watch what it asked for."""

    def __init__(
        self, ctx: HubContext, auth: Authenticator | None, principal: Principal, queues: frozenset[str] | None
    ) -> None:
        self.ctx, self.auth = ctx, auth
        self.principal, self.queues = principal, queues
        self.recheck = current_recheck()
        self.generation = auth.generation if auth is not None else 0
        self.checked = time.monotonic()
        self.lost: Exception | None = None

    def still(self, queue: str) -> bool:
        """Whether the stream may go on (run in a pool thread: it may read the queues)."""
        if self.lost is not None:
            return False
        generation = self.auth.generation if self.auth is not None else 0
        if generation == self.generation and time.monotonic() - self.checked < RECHECK_EVERY:
            return True
        self.generation, self.checked = generation, time.monotonic()
        try:
            principal = self.recheck()
            if principal != self.principal:
                if queue and not may(principal, Action.read_jobs, queue=queue):
                    raise PermissionDenied(f"{principal.describe()} may no longer read queue {queue}")
                now = readable_queues(self.ctx, principal)
                narrowed = now is not None and (self.queues is None or not now >= self.queues)
                if narrowed:
                    raise PermissionDenied(
                        f"{principal.describe()} may no longer read every queue this watch showed: "
                        "watch again"
                    )
        except HubError as exc:  # UNAUTHENTICATED, PERMISSION_DENIED
            self.lost = exc
            return False
        return True


class WatchServer:
    def __init__(
        self, ctx: HubContext, feed: WatchFeed, stop: threading.Event, auth: Authenticator | None = None
    ) -> None:
        self.ctx = ctx
        self.feed = feed
        self.auth = auth
        self.stop = stop  # the hub's: its streams end UNAVAILABLE, and clients resume elsewhere
        share = ctx.settings.max_watches_per_caller or max(1, ctx.settings.max_watches // 4)
        self.limit = WatchLimit(ctx.settings.max_watches, share)
        # A running stream holds one thread while it waits for news; closing one may hold a second.
        self.pool = ThreadPoolExecutor(max_workers=2 * self.limit.most, thread_name_prefix="watch")

    def recheck_all(self) -> None:
        """After an auth reload: every stream identifies its caller again at once."""
        self.feed.poke()

    async def serve(
        self, request: jobs_pb2.WatchJobsRequest, context: Any = None
    ) -> AsyncIterator[jobs_pb2.JobEvent]:
        if request.queue:
            require(Action.read_jobs, queue=request.queue)
        principal = current_principal()
        who = principal.audit_name if principal.kind != "open" else caller_peer(context)
        self.limit.enter(who)
        loop = asyncio.get_running_loop()
        ended = threading.Event()
        steps: _Steps | None = None
        try:
            queues = await loop.run_in_executor(self.pool, readable_queues, self.ctx, principal)
            rights = Rights(self.ctx, self.auth, principal, queues)
            filters = Filters(
                queue=request.queue,
                namespace=request.namespace,
                name=request.name,
                labels=dict(request.labels),
                queues=queues,
            )
            items = watch(
                self.ctx,
                self.feed,
                filters,
                request.from_revision if request.HasField("from_revision") else None,
                active=lambda: not (ended.is_set() or self.stop.is_set()) and rights.still(request.queue),
            )
            steps = _Steps(items)
            while True:
                item = await loop.run_in_executor(self.pool, steps.next)
                if isinstance(item, Bookmark):
                    yield jobs_pb2.JobEvent(type=jobs_pb2.JobEvent.BOOKMARK, revision=item.revision)
                elif isinstance(item, JobChange):
                    yield convert.job_event(item)
                elif self.stop.is_set():
                    raise Coded(
                        grpc.StatusCode.UNAVAILABLE, "the hub is stopping: watch again from the last revision"
                    )
                elif rights.lost is not None:
                    raise rights.lost
                else:
                    return
        finally:
            ended.set()
            self.feed.poke()
            if steps is not None:
                with contextlib.suppress(RuntimeError):  # the pool is shut down: the hub is stopping
                    self.pool.submit(steps.close)
            self.limit.leave(who)

    def shutdown(self) -> None:
        """After the hub's stop is set: the streams have ended (or end within a step)."""
        self.feed.poke()
        self.pool.shutdown(wait=False, cancel_futures=True)


def caller_peer(context: Any) -> str:
    """An open hub's callers are all "anonymous": their share is counted per host instead."""
    peer = context.peer() if context is not None else ""
    return "peer:" + peer_host(peer or "")
