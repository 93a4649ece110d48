"""Fault knobs and the request log: injected error answers, a paused server, counted requests."""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from tests.kubeapi.status import ApiError, failure, forbidden, internal, too_many_requests

REQUEST_LOG_LIMIT = 500_000


@dataclass
class Fault:
    id: int
    status: int
    remaining: int | None  # None: until cleared
    path: re.Pattern[str] | None
    method: str | None
    retry_after: int
    message: str

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "remaining": self.remaining,
            "path": None if self.path is None else self.path.pattern,
            "method": self.method,
        }


@dataclass(frozen=True)
class RequestInfo:
    """What the router made of a request; the log and 403 faults speak in these terms."""

    method: str
    path: str
    query: str
    verb: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def resource_path(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


class Faults:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.rules: list[Fault] = []
        self.paused = False
        self.refusing = False
        self.pause_epoch = 0
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._seq = itertools.count(1)
        self.log: deque[dict[str, Any]] = deque(maxlen=REQUEST_LOG_LIMIT)
        self.counts: Counter[str] = Counter()

    # -- injected errors -----------------------------------------------------------------------
    def add(
        self,
        status: int,
        *,
        count: int | None = 1,
        path: str | None = None,
        method: str | None = None,
        retry_after: int = 1,
        message: str = "",
    ) -> int:
        fault = Fault(
            next(self._ids),
            int(status),
            count,
            None if path is None else re.compile(path),
            None if method is None else method.upper(),
            int(retry_after),
            message,
        )
        self.rules.append(fault)
        return fault.id

    def clear(self) -> None:
        self.rules.clear()

    def check(self, info: RequestInfo) -> ApiError | None:
        for fault in self.rules:
            if fault.method is not None and fault.method != info.method:
                continue
            if fault.path is not None and not fault.path.search(info.path):
                continue
            if fault.remaining is not None:
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self.rules.remove(fault)
            return self._error(fault, info)
        return None

    @staticmethod
    def _error(fault: Fault, info: RequestInfo) -> ApiError:
        if fault.status == 429:
            return too_many_requests(fault.retry_after)
        if fault.status == 500:
            return internal(fault.message or "injected fault")
        if fault.status == 403:
            scope = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
            why = (
                f'User "system:serviceaccount:default:emulated" cannot {info.verb or "get"} resource '
                f'"{info.resource_path}" in API group "{info.group}" {scope}'
            )
            return forbidden(info.resource_path, info.name, fault.message or why, info.group)
        err = ApiError(fault.status, "InternalError", fault.message or "injected fault")
        err.body = failure(fault.status, "", fault.message or "injected fault")
        return err

    # -- pause ---------------------------------------------------------------------------------
    def pause(self, *, refuse: bool = False) -> None:
        self.paused = True
        self.refusing = refuse
        self.pause_epoch += 1
        self._resumed.clear()

    def resume(self) -> None:
        self.paused = False
        self.refusing = False
        self._resumed.set()

    async def wait_resumed(self) -> None:
        await self._resumed.wait()

    # -- request log ---------------------------------------------------------------------------
    def record(self, info: RequestInfo, code: int) -> None:
        seq = next(self._seq)
        self.log.append(
            {
                "seq": seq,
                "time": time.time(),
                "method": info.method,
                "path": info.path,
                "query": info.query,
                "verb": info.verb,
                "group": info.group,
                "resource": info.resource_path,
                "namespace": info.namespace,
                "name": info.name,
                "code": code,
            }
        )
        self.counts[f"{info.verb} {info.resource_path}".strip()] += 1

    def requests(self, since: int = 0, **match: Any) -> list[dict[str, Any]]:
        return [r for r in self.log if r["seq"] > since and all(r.get(k) == v for k, v in match.items())]
