"""Who is calling: a session cookie made at login, or ``Authorization: Bearer`` on the request.

The session id is an opaque random value; the token it stands for stays in this process's memory.
Every session has its own CSRF token, required on each state-changing request that a cookie
authenticates (a bearer token is never sent by a browser on its own, so it needs none).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import grpc
from google.protobuf.message import Message

from vglobal.api.v1 import clusters_pb2, jobs_pb2, queues_pb2
from vglobal.dashboard.gateway import Gateway
from vglobal.dashboard.shared_watch import SharedWatches
from vglobal.sdk import VGlobalError

COOKIE = "vglobal_session"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
IDLE_SECONDS = 8 * 3600
MAX_SESSIONS = 10_000
PROBE_SECONDS = 60.0
MAX_TOKEN = 4096  # longer than any token the hub issues: refused (401) before any hub call


@dataclass
class Caller:
    """The identity a request acts with; ``token`` None on an open hub."""

    token: str | None
    csrf: str = ""
    session_id: str | None = None
    may: frozenset[str] = frozenset()
    seen: float = field(default_factory=time.monotonic)

    def can(self, action: str) -> bool:
        return action in self.may

    def csrf_ok(self, given: str | None) -> bool:
        """Bearer callers need no CSRF token; a session's request must carry its own."""
        if self.session_id is None:
            return True
        return bool(given) and hmac.compare_digest(given or "", self.csrf)


# What each action button needs, asked of the hub with a call its guard judges by role before the
# servicer refuses the empty reference: PERMISSION_DENIED means the role may not, anything else may.
PROBES: dict[str, tuple[str, str, Message]] = {
    "cancel_jobs": ("jobs", "CancelJob", jobs_pb2.JobRef(name="")),
    "delete_jobs": ("jobs", "DeleteJob", jobs_pb2.JobRef(name="")),
    "manage_queues": ("queues", "OpenQueue", queues_pb2.QueueRef(name="")),
    "manage_clusters": ("clusters", "CordonCluster", clusters_pb2.ClusterRef(name="")),
}


async def probe(gateway: Gateway, token: str | None) -> frozenset[str]:
    allowed: set[str] = set()
    for action, (service, method, request) in PROBES.items():
        try:
            await gateway.call(getattr(getattr(gateway, service), method), request, token)
        except VGlobalError as exc:
            if exc.code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
                continue
        allowed.add(action)
    return frozenset(allowed)


class Sessions:
    """Logged-in sessions (in memory: a restart logs everyone out) and the per-token probe cache."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._sessions: OrderedDict[str, Caller] = OrderedDict()
        self._bearers: dict[str, tuple[float, frozenset[str]]] = {}
        self._open: tuple[float, bool] | None = None
        self.watches = SharedWatches(gateway)  # the live pages' hub watches, one per caller
        self.watches.revoked = self._revoked

    async def login(self, token: str | None) -> Caller:
        sid = secrets.token_urlsafe(32)
        may = await self._may(token)
        caller = Caller(token=token, csrf=secrets.token_urlsafe(32), session_id=sid, may=may)
        self._sessions[sid] = caller
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return caller

    def get(self, sid: str | None) -> Caller | None:
        caller = self._sessions.get(sid or "")
        if caller is None:
            return None
        now = time.monotonic()
        if now - caller.seen > IDLE_SECONDS:
            self._sessions.pop(caller.session_id or "", None)
            self.watches.end(SharedWatches.key(sid, None), "the session expired: log in again")
            return None
        caller.seen = now
        self._sessions.move_to_end(sid or "")
        return caller

    def logout(self, sid: str | None) -> None:
        self._sessions.pop(sid or "", None)
        self.watches.end(SharedWatches.key(sid or "", None), "logged out")

    def _revoked(self, key: str) -> None:
        """The hub no longer knows a session's token (revoked): the session ends with it."""
        if key.startswith("session:"):
            self._sessions.pop(key.removeprefix("session:"), None)

    async def bearer(self, token: str) -> Caller:
        return Caller(token=token, may=await self._may(token))

    async def _may(self, token: str | None) -> frozenset[str]:
        """What the token's role may do, asked of the hub at most once a PROBE_SECONDS."""
        key = hashlib.sha256((token or "").encode()).hexdigest()
        now = time.monotonic()
        cached = self._bearers.get(key)
        if cached is None or now - cached[0] > PROBE_SECONDS:
            if len(self._bearers) > MAX_SESSIONS:
                self._bearers.clear()
            cached = (now, await probe(self.gateway, token))
            self._bearers[key] = cached
        return cached[1]

    async def hub_is_open(self) -> bool:
        now = time.monotonic()
        if self._open is None or now - self._open[0] > PROBE_SECONDS:
            self._open = (now, await self.gateway.is_open())
        return self._open[1]
