"""/jobs/{namespace}/{name}/logs: the job's pod output as Server-Sent Events, for the job page's
log panel, read through the hub's StreamLogs as the caller (its "read logs" permission decides).

Each line is one ``line`` event (``{"pod": ..., "text": ...}``); the stream ends with ``end``
when the pods' output ended, or ``gone`` with the hub's reason. Bounded: the last TAIL lines
first, MAX_LINES per stream, and MAX_STREAMS open at once per caller; the SDK's followed stream
resumes by itself through a hub restart or the agent reconnecting.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from vglobal.dashboard.inputs import BadInput, digits
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import error, gateway, page
from vglobal.sdk import VGlobalError

TAIL = 200  # lines of each pod before following (a panel is for what happens now)
MAX_TAIL = 5_000
MAX_LINES = 100_000  # per stream; the panel keeps fewer (logs.js)
MAX_STREAMS = 8  # per caller (session or bearer token), across its open pages
KEEPALIVE = 15.0

_open: dict[str, int] = {}


def _key(caller: Caller) -> str:
    return caller.session_id or f"token:{hash(caller.token)}"


def _sse(event: str, data: object) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


@page()
async def job_logs(request: Request, caller: Caller) -> Response:
    ns, name = request.path_params["namespace"], request.path_params["name"]
    params = request.query_params
    tail = digits("tail", params.get("tail", ""))
    tail = TAIL if tail is None else tail
    if tail > MAX_TAIL:
        raise BadInput(f"tail: at most {MAX_TAIL}")
    pod = params.get("pod", "")
    if len(pod) > 253:
        raise BadInput("pod: at most 253 characters")
    key = _key(caller)
    if _open.get(key, 0) >= MAX_STREAMS:
        return error(request, caller, 429, f"{MAX_STREAMS} log streams are open already; close a page")
    client = gateway(request).with_token(caller.token)
    _open[key] = _open.get(key, 0) + 1

    async def body() -> AsyncIterator[str]:
        lines = client.logs(name, ns, pod=pod, follow=True, tail=tail)
        queue: asyncio.Queue[str | None] = asyncio.Queue(256)

        async def pump() -> None:
            sent = 0
            try:
                async for line in lines:
                    await queue.put(_sse("line", {"pod": line.pod, "text": line.text}))
                    sent += 1
                    if sent >= MAX_LINES:
                        await queue.put(_sse("gone", {"reason": f"{MAX_LINES} lines shown: reload"}))
                        break
                else:
                    await queue.put(_sse("end", {}))
            except VGlobalError as exc:
                await queue.put(_sse("gone", {"reason": exc.message, "code": exc.code.name}))
            finally:
                await queue.put(None)

        task = asyncio.create_task(pump())
        try:
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    if await request.is_disconnected():
                        return
                    yield ": keepalive\n\n"
                    continue
                if item is None:
                    return
                yield item
        finally:
            task.cancel()
            n = _open.get(key, 1) - 1
            if n > 0:
                _open[key] = n
            else:
                _open.pop(key, None)

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)
