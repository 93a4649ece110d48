"""The agent's writes to the API server, concurrently from a pool of threads.

The main loop hands over ``Op`` values and later collects ``Outcome`` values from ``outcomes``
(it never waits for a write). A write the server could not take (unreachable, 429, 5xx) is tried
again with jittered exponential back-off (tenacity), at least as long as a Retry-After says: an
op marked ``persistent`` until it succeeds or the writer stops (a pod must not be lost because the
API server restarted), other ops a few times. Every other answer is the op's outcome, for the
backend to act on. A POST that timed out may have been applied: creates are idempotent through
409 AlreadyExists (the outcome then carries the existing object), binds through 409 Conflict.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception, wait_random_exponential

from vglobal.agent.kube.api import ApiError, KubeApi

log = logging.getLogger(__name__)

_ATTEMPTS = 3  # for ops that are not persistent


@dataclass(frozen=True, slots=True)
class Op:
    kind: str  # create-owner | create-pod | create-object | bind | get-pod | delete-pod | event ...
    key: str  # what the outcome is about: a pod id or a job uid
    method: str
    path: str
    body: Any = None
    query: tuple[tuple[str, str], ...] = ()
    persistent: bool = True
    fetch_on_conflict: str = ""  # a path to GET when a create answers 409 AlreadyExists
    extra: Any = None  # the backend's context for this op
    before: tuple[str, str, Any] | None = None  # (method, path, body) sent first, e.g. a gate lifted


@dataclass(frozen=True, slots=True)
class Outcome:
    op: Op
    result: dict[str, Any] | None = None
    error: ApiError | None = None
    existing: dict[str, Any] | None = None  # on 409 AlreadyExists: the object that has the name

    @property
    def ok(self) -> bool:
        return self.error is None


def _retriable(exc: BaseException) -> bool:
    return isinstance(exc, ApiError) and exc.retriable


@dataclass
class WriterStats:
    sent: int = 0
    retried: int = 0
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Writer:
    def __init__(self, api: KubeApi, *, workers: int = 8, backoff_max: float = 5.0) -> None:
        self.api = api
        self.backoff_max = backoff_max
        self.outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self.stats = WriterStats()
        self._stop = threading.Event()
        # plain threads on a queue: an executor's future and condition per op cost more than the
        # bookkeeping they would save here
        self._ops: queue.SimpleQueue[Op | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"kube-writer-{i}", daemon=True) for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    def submit(self, op: Op) -> None:
        self._ops.put(op)

    def close(self, timeout: float = 5.0) -> None:
        """Stop taking ops; wait up to ``timeout`` in all for writes in flight (threads that are
        still waiting on a silent server are daemons and go with the process)."""
        self._stop.set()
        for _ in self._threads:
            self._ops.put(None)
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    # ---- on the writer threads

    def _work(self) -> None:
        while True:
            op = self._ops.get()
            if op is None or self._stop.is_set():
                return
            try:
                out = self._execute(op)
            except Exception as exc:  # never lose an op's outcome to a bug in a worker
                log.exception("%s %s failed", op.method, op.path)
                out = Outcome(op, error=ApiError(-1, "AgentError", str(exc), method=op.method, path=op.path))
            if not out.ok:
                with self.stats.lock:
                    self.stats.failed += 1
            self.outcomes.put(out)

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def _wait(self, op: Op, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = float(wait_random_exponential(multiplier=0.1, max=self.backoff_max)(state))
        if isinstance(exc, ApiError) and exc.retry_after:
            delay = max(delay, exc.retry_after)
        with self.stats.lock:
            self.stats.retried += 1
        if state.attempt_number in (1, 10) or state.attempt_number % 50 == 0:
            log.warning("%s %s: %s; trying again in %.1fs", op.method, op.path, exc, delay)
        return delay

    def _stop_when(self, op: Op) -> Any:
        def stop(state: RetryCallState) -> bool:
            return self._stop.is_set() or (not op.persistent and state.attempt_number >= _ATTEMPTS)

        return stop

    def _execute(self, op: Op) -> Outcome:
        try:
            with self.stats.lock:
                self.stats.sent += 1
            result = self._request(op)
            return Outcome(op, result=result)
        except ApiError as exc:
            if not exc.retriable or self._stop.is_set():
                return self._refused(op, exc)
            first = exc
        return self._retry(op, first)  # the server was away or busy: back off and try again

    def _retry(self, op: Op, first: ApiError) -> Outcome:
        with self.stats.lock:
            self.stats.retried += 1
        self._sleep(max(first.retry_after or 0.0, random.uniform(0.05, 0.2)))
        try:
            for attempt in Retrying(
                retry=retry_if_exception(_retriable),
                wait=lambda state: self._wait(op, state),
                stop=self._stop_when(op),
                sleep=self._sleep,
                reraise=True,
            ):
                with attempt:
                    with self.stats.lock:
                        self.stats.sent += 1
                    result = self._request(op)
        except ApiError as exc:
            return self._refused(op, exc)
        except RetryError as exc:  # stopped while waiting to try again
            return Outcome(op, error=ApiError(0, "Stopped", str(exc), method=op.method, path=op.path))
        return Outcome(op, result=result)

    def _request(self, op: Op) -> dict[str, Any]:
        if op.before is not None:
            method, path, body = op.before
            self.api.request(method, path, body=body)
        return self.api.request(op.method, op.path, query=op.query, body=op.body)

    def _refused(self, op: Op, exc: ApiError) -> Outcome:
        if exc.status == 409 and op.fetch_on_conflict and exc.reason == "AlreadyExists":
            return self._existing(op, exc)
        return Outcome(op, error=exc)

    def _existing(self, op: Op, conflict: ApiError) -> Outcome:
        try:
            found = self.api.request("GET", op.fetch_on_conflict)
        except ApiError as exc:
            if exc.status == 404:  # gone meanwhile: the name is free, say so as a conflict
                return Outcome(op, error=conflict)
            return Outcome(op, error=exc)
        return Outcome(op, error=conflict, existing=found)
