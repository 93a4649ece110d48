"""Live pages: Server-Sent Events that say "changed" when a change their filters match happens.

Every live page of a caller shares the caller's one hub watch (shared_watch.py). The stream says
``ready`` once that watch runs, ``changed`` with the revision reached after each debounced burst,
and ``gone`` with the reason when the watch ended (with ``retry:`` when the hub said when).
Changes are debounced: the first one after a quiet spell starts a short wait, every change in it
is folded into one message, and the page then fetches its results part once. A page under 500
changes a second thus re-renders a few times a second, not 500.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from vglobal.api.v1 import jobs_pb2
from vglobal.dashboard.inputs import digits
from vglobal.dashboard.jobs_query import JobQuery
from vglobal.dashboard.session import Caller
from vglobal.dashboard.shared_watch import Filter, Page, SharedWatches
from vglobal.dashboard.web import page, sessions

DEBOUNCE = 0.25  # seconds from the first change of a burst to the message
KEEPALIVE = 15.0  # a comment line this often keeps proxies from closing an idle stream


def _revision(request: Request) -> int | None:
    """The revision the page was rendered at; without one, from now on."""
    return digits("rev", request.query_params.get("rev", ""))


async def changes(page: Page, disconnected: asyncio.Event) -> AsyncIterator[str]:
    """SSE lines for one page until the watch ends or the page leaves."""
    await page.ready.wait()
    if page.gone is None:
        yield f"event: ready\ndata: {page.revision}\n\n"
    while not disconnected.is_set():
        if page.gone is not None:
            ms = int(page.retry * 1000) if page.retry else 0
            told = json.dumps({"reason": page.gone, "retry_ms": ms})
            retry = f"retry: {ms}\n" if ms else ""  # for any SSE client: when to ask again
            yield f"{retry}event: gone\ndata: {told}\n\n"
            return
        try:
            await asyncio.wait_for(page.pending.wait(), KEEPALIVE)
        except TimeoutError:
            yield ": keepalive\n\n"
            continue
        if page.gone is not None:
            continue
        await asyncio.sleep(DEBOUNCE)
        page.pending.clear()
        yield f"event: changed\ndata: {page.revision}\n\n"


def stream(request: Request, caller: Caller, watch: jobs_pb2.WatchJobsRequest, since: int | None) -> Response:
    disconnected = asyncio.Event()
    watches = sessions(request).watches
    key = SharedWatches.key(caller.session_id, caller.token)

    async def body() -> AsyncIterator[str]:
        async def watch_disconnect() -> None:
            while not await request.is_disconnected():
                await asyncio.sleep(1.0)
            disconnected.set()
            one.pending.set()

        one = Page(Filter(watch), since)
        shared = watches.follow(key, caller.token, one)
        watcher = asyncio.create_task(watch_disconnect())
        try:
            async for line in changes(one, disconnected):
                yield line
        finally:
            watcher.cancel()
            shared.leave(one)

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


@page()
async def jobs_live(request: Request, caller: Caller) -> Response:
    query = JobQuery.of(request.query_params)
    since = _revision(request)
    return stream(request, caller, query.watch(since), since)


@page()
async def job_live(request: Request, caller: Caller) -> Response:
    ns, name = request.path_params["namespace"], request.path_params["name"]
    since = _revision(request)
    return stream(request, caller, jobs_pb2.WatchJobsRequest(namespace=ns, name=name), since)
