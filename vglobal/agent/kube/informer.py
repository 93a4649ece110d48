"""List + watch of one kind, on a thread, with client-go's informer semantics.

The first list (in pages) replaces the consumer's cache; watches then resume from the last
resourceVersion seen (BOOKMARK events included), each bounded by ``timeoutSeconds`` on the server
and a read timeout on the socket. A 410 Expired (a version too old for the server's history) means
list again and replace the cache. Errors back off with jittered exponential waits (tenacity),
at least as long as a 429's Retry-After; a 403 logs the RBAC rule the agent is missing.

Objects are converted on this thread (``convert``) and handed to ``sink`` as ``Change`` values; the
consumer applies them on its own thread, so the informer never touches the consumer's state.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, wait_random_exponential

from vglobal.agent.kube.api import ApiError, KubeApi

log = logging.getLogger(__name__)

T = TypeVar("T")
PAGE = 500


class Expired(Exception):
    """The watch's resourceVersion is older than the server's history (410): list again."""


@dataclass(frozen=True, slots=True)
class Change(Generic[T]):
    source: str  # the informer's name (nodes, pods, hypernodes)
    kind: str  # replace | upsert | delete
    item: T | None = None
    items: tuple[T, ...] = ()


@dataclass
class InformerState:
    synced: threading.Event = field(default_factory=threading.Event)
    last_ok: float = 0.0  # monotonic time of the last successful exchange
    error: str = ""  # the last error, cleared on success


class Informer(Generic[T]):
    def __init__(
        self,
        api: KubeApi,
        name: str,
        path: str,
        convert: Callable[[dict[str, Any]], T],
        sink: Callable[[Change[T]], None],
        *,
        label_selector: str = "",
        watch_timeout: int = 300,
        backoff_max: float = 30.0,
    ) -> None:
        self.api = api
        self.name = name
        self.path = path
        self.convert = convert
        self.sink = sink
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.backoff_max = backoff_max
        self.state = InformerState()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"informer-{name}", daemon=True)
        self._rv: str | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self.state.synced.wait(timeout)

    # ---- the thread

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                for attempt in Retrying(
                    retry=retry_if_exception_type(Exception),  # nothing may end the watch for good
                    wait=self._wait,
                    stop=lambda _s: self._stop.is_set(),
                    sleep=self._sleep,
                    reraise=False,
                ):
                    with attempt:
                        self._session()
            except RetryError:
                return

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = wait_random_exponential(multiplier=0.2, max=self.backoff_max)(state)
        if isinstance(exc, ApiError) and exc.retry_after:
            delay = max(delay, exc.retry_after)
        return float(delay)

    def _session(self) -> None:
        """List if needed, then watch until an error; after progress an error ends the session
        normally so the next one starts with a fresh back-off."""
        progressed = False
        try:
            while not self._stop.is_set():
                if self._rv is None:
                    self._list()
                    progressed = True
                try:
                    self._watch()
                    progressed = True
                except Expired:
                    log.info("%s: watch expired at version %s; listing again", self.name, self._rv)
                    self._rv = None
        except Exception as exc:  # an API error, or an answer of a shape nobody expected
            self._failed(exc)
            if not progressed:
                raise

    def _failed(self, exc: Exception) -> None:
        self.state.error = str(exc)
        if isinstance(exc, ApiError) and exc.status == 403:
            log.error(
                "%s: forbidden; the agent's RBAC lacks: %s (%s)", self.name, exc.rbac_rule(), exc.message
            )
        elif isinstance(exc, ApiError) and exc.status == 410:
            self._rv = None  # an expired continue token: list from the start
        elif isinstance(exc, (ApiError, ValueError)):
            log.warning("%s: %s", self.name, exc)
        else:
            log.exception("%s: unexpected %s; listing again", self.name, type(exc).__name__)
            self._rv = None

    def _ok(self) -> None:
        self.state.last_ok = time.monotonic()
        self.state.error = ""

    def _query(self) -> dict[str, str]:
        return {"labelSelector": self.label_selector} if self.label_selector else {}

    def _list(self) -> None:
        items: list[T] = []
        token = ""
        while True:
            query = {**self._query(), "limit": str(PAGE)}
            if token:
                query["continue"] = token
            page = self.api.request("GET", self.path, query=query, timeout=(5.0, 60.0))
            items.extend(self.convert(obj) for obj in page.get("items") or [])
            meta = page.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if not token:
                break
        self._rv = str(meta.get("resourceVersion") or "")
        self._ok()
        self.sink(Change(self.name, "replace", items=tuple(items)))
        self.state.synced.set()

    def _watch(self) -> None:
        # client-go spreads watch lengths so that many clients do not reconnect together
        timeout = int(self.watch_timeout * random.uniform(1.0, 2.0))
        query = {
            **self._query(),
            "watch": "1",
            "resourceVersion": self._rv or "",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        for event in self.api.stream(self.path, query, timeout=(5.0, timeout + 30.0)):
            if self._stop.is_set():
                return
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code") or 0)
                if code == 410:
                    raise Expired(obj.get("message", ""))
                raise ApiError(code, str(obj.get("reason", "")), str(obj.get("message", "")), path=self.path)
            self._rv = str((obj.get("metadata") or {}).get("resourceVersion") or self._rv)
            self._ok()
            if kind == "BOOKMARK":
                continue
            change = "delete" if kind == "DELETED" else "upsert"
            self.sink(Change(self.name, change, item=self.convert(obj)))
        self._ok()
