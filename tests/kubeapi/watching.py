"""One watch request: the initial or resumed events, then live changes, BOOKMARKs, and the end of the
stream at ``timeoutSeconds`` — written as the apiserver's watch cache writes them."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from tests.kubeapi.faults import Faults
from tests.kubeapi.kinds import Kind
from tests.kubeapi.selectors import Selector
from tests.kubeapi.status import ApiError, bad_request, too_large_resource_version
from tests.kubeapi.store import ADDED, Store, Watcher, encode

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
PRE_TIMEOUT_BOOKMARK = 2.0  # the watch cache sends its last bookmark this long before the deadline


@dataclass
class WatchSettings:
    bookmark_interval: float = 60.0  # the apiserver's bookmark frequency
    default_timeout: float = 1800.0  # the apiserver picks a random one in [min-request-timeout, 2x]


def bookmark_line(kind: Kind, rv: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, object] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return (
        encode(
            {
                "type": "BOOKMARK",
                "object": {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": meta},
            }
        )
        + b"\n"
    )


def error_line(err: ApiError) -> bytes:
    return encode({"type": "ERROR", "object": err.body}) + b"\n"


def _next_bookmark(now: float, deadline: float, interval: float) -> float:
    heartbeat = now + interval
    pre_timeout = deadline - PRE_TIMEOUT_BOOKMARK
    if pre_timeout < heartbeat:
        heartbeat = pre_timeout if pre_timeout > now else math.inf
    return heartbeat


def open_watcher(
    store: Store, kind: Kind, namespace: str, selector: Selector, query: Mapping[str, str]
) -> tuple[Watcher, bytes | None]:
    """Register the watcher and queue what precedes live events, in one step with no await (no gap)."""
    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    w = Watcher(kind, namespace, selector, bookmarks)
    rv_text = query.get("resourceVersion", "")
    send_initial = query.get("sendInitialEvents") == "true"
    if send_initial or rv_text in ("", "0"):
        for entry in store.items(kind, namespace, selector):
            w.pending.append(b'{"type":"' + ADDED.encode() + b'","object":' + entry.raw() + b"}\n")
        if send_initial and bookmarks:
            w.pending.append(bookmark_line(kind, store.rv, initial_end=True))
    else:
        try:
            rv = int(rv_text)
        except ValueError:
            raise bad_request(f"invalid resource version: {rv_text}") from None
        try:
            if rv > store.rv:
                raise too_large_resource_version(rv, store.rv)
            for change in store.changes_since(kind, rv):
                w.offer(change)
        except ApiError as err:
            return w, error_line(err)
    store.table(kind).watchers.add(w)
    return w, None


async def serve_watch(
    request: web.BaseRequest,
    store: Store,
    faults: Faults,
    settings: WatchSettings,
    kind: Kind,
    namespace: str,
    selector: Selector,
    on_open: Callable[[], None] = lambda: None,
) -> web.StreamResponse:
    query = request.query
    timeout = float(query.get("timeoutSeconds") or settings.default_timeout)
    w, error = open_watcher(store, kind, namespace, selector, query)
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    loop = asyncio.get_running_loop()
    try:
        await resp.prepare(request)
        on_open()
        if error is not None:
            await resp.write(error)
            await resp.write_eof()
            return resp
        deadline = loop.time() + timeout
        next_bookmark = (
            _next_bookmark(loop.time(), deadline, settings.bookmark_interval) if w.bookmarks else math.inf
        )
        epoch = faults.pause_epoch
        while not w.closed:
            if faults.paused or faults.pause_epoch != epoch:
                await faults.wait_resumed()
                w.close(abort=True)  # the connection did not survive the outage
                break
            if w.pending:
                data = b"".join(w.pending)
                w.pending.clear()
                await resp.write(data)
                continue
            now = loop.time()
            if now >= deadline:
                break
            if now >= next_bookmark:
                w.pending.append(bookmark_line(kind, store.rv))
                next_bookmark = _next_bookmark(now, deadline, settings.bookmark_interval)
                continue
            w.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(w.wake.wait(), min(deadline, next_bookmark) - now)
        if w.abort:
            if request.transport is not None:
                request.transport.abort()
            return resp
        await resp.write_eof()
        return resp
    except ConnectionResetError:
        return resp
    finally:
        store.table(kind).watchers.discard(w)
        w.closed = True


def send_bookmarks(store: Store) -> int:
    """A BOOKMARK now on every watch that asked for them (the apiserver does so every minute)."""
    n = 0
    for w in store.all_watchers():
        if w.bookmarks and not w.closed:
            w.push(bookmark_line(w.kind, store.rv))
            n += 1
    return n
