"""Live pages: Server-Sent Events that say "changed" when WatchJobs reports a matching change.

Changes are debounced: the first one after a quiet spell starts a short wait, every change in it
is folded into one message, and the page then fetches its results part once. A page under 500
changes a second thus re-renders a few times a second, not 500. The stream resumes from the
revision the page was rendered at, so no change between render and subscribe is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from vglobal.api.v1 import jobs_pb2
from vglobal.dashboard.gateway import Gateway
from vglobal.dashboard.jobs_query import JobQuery, QueryError
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import error, gateway, page
from vglobal.sdk import VGlobalError

DEBOUNCE = 0.25  # seconds from the first change of a burst to the message
KEEPALIVE = 15.0  # a comment line this often keeps proxies from closing an idle stream


def _revision(request: Request) -> int | None:
    """The revision the page was rendered at; without one, from now on."""
    raw = request.query_params.get("rev", "")
    return int(raw) if raw.isdigit() else None


async def changes(
    gw: Gateway, token: str | None, watch: jobs_pb2.WatchJobsRequest, disconnected: asyncio.Event
) -> AsyncIterator[str]:
    """SSE lines: ``changed`` with the revision reached, after each debounced burst of changes."""
    pending = asyncio.Event()
    state = {"revision": watch.from_revision, "error": ""}

    async def pump() -> None:
        try:
            async for event in gw.watch(watch, token):
                state["revision"] = event.revision
                if event.type != jobs_pb2.JobEvent.BOOKMARK:
                    pending.set()
        except VGlobalError as exc:
            state["error"] = exc.message
        pending.set()

    task = asyncio.create_task(pump())
    try:
        while not disconnected.is_set():
            try:
                await asyncio.wait_for(pending.wait(), KEEPALIVE)
            except TimeoutError:
                yield ": keepalive\n\n"
                continue
            if state["error"]:
                yield f"event: gone\ndata: {json.dumps(state['error'])}\n\n"
                return
            await asyncio.sleep(DEBOUNCE)
            pending.clear()
            yield f"event: changed\ndata: {state['revision']}\n\n"
            if task.done():
                return
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def stream(request: Request, caller: Caller, watch: jobs_pb2.WatchJobsRequest) -> Response:
    disconnected = asyncio.Event()

    async def body() -> AsyncIterator[str]:
        async def watch_disconnect() -> None:
            while not await request.is_disconnected():
                await asyncio.sleep(1.0)
            disconnected.set()

        watcher = asyncio.create_task(watch_disconnect())
        try:
            async for line in changes(gateway(request), caller.token, watch, disconnected):
                yield line
        finally:
            watcher.cancel()

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


@page()
async def jobs_live(request: Request, caller: Caller) -> Response:
    try:
        query = JobQuery.of(request.query_params)
    except QueryError as exc:
        return error(request, caller, 400, str(exc))
    return stream(request, caller, query.watch(_revision(request)))


@page()
async def job_live(request: Request, caller: Caller) -> Response:
    ns, name = request.path_params["namespace"], request.path_params["name"]
    watch = jobs_pb2.WatchJobsRequest(namespace=ns, name=name, from_revision=_revision(request))
    return stream(request, caller, watch)
