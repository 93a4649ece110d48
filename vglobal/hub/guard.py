"""The gate every call passes: decode, authenticate, authorize, rate-limit, and answer errors cleanly.

One grpc.aio server interceptor wraps each method's handler. A request that does not decode is
answered INVALID_ARGUMENT; a caller without valid credentials UNAUTHENTICATED; a role that may not
do the call at all PERMISSION_DENIED (the servicers check the queue or cluster itself); a caller
over its rate RESOURCE_EXHAUSTED with ``retry-after-ms`` in the trailing metadata, and so is a caller
with too many unary calls in progress at once (``InFlight``), so one flooding caller cannot hold
every server thread. A unary call is checked before its request is parsed: a refusal costs no
parsing. Anything
unexpected is logged once and answered INTERNAL without its traceback. Every status message is
kept under 4 KiB. Health and reflection need no credentials and are not rate-limited.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import random
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import grpc

from vglobal.hub.auth.access import PRINCIPAL, RECHECK
from vglobal.hub.auth.authenticator import Authenticator, PermissionDenied, bearer_token
from vglobal.hub.auth.methods import AGENT_CONNECT, METHODS, is_public
from vglobal.hub.auth.policy import Principal, decide
from vglobal.hub.auth.ratelimit import RateLimiter
from vglobal.hub.auth.refusals import RefusalLog
from vglobal.hub.errors import HubError, status_of
from vglobal.hub.request_decode import refuse_undecodable, safe_deserializer
from vglobal.model.errors import clip_message

log = logging.getLogger(__name__)

RETRY_AFTER = "retry-after-ms"
Aborted = grpc.aio.AbortError
if TYPE_CHECKING:
    Handler = grpc.RpcMethodHandler[Any, Any]


class RateLimited(HubError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, who: str, wait: float, key: str = "") -> None:
        super().__init__(f"{who} is over its rate limit; retry in {max(1, math.ceil(wait * 1000))} ms")
        self.wait = wait
        self.key = key  # the caller's calls are counted by


class TooManyCalls(HubError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, who: str, limit: int, key: str = "") -> None:
        super().__init__(
            f"{who} has {limit} calls in progress, the most one caller may; retry in {BUSY_RETRY_MS} ms"
        )
        self.wait = BUSY_RETRY_MS / 1000
        self.key = key


BUSY_RETRY_MS = 100  # a call in progress ends within milliseconds, mostly
# A coroutine call refused for its rate or its calls in progress is answered this late (holding no
# thread; its retry delay shortened by as much): a caller that ignores the delay and resends at
# once is slowed to its concurrency per HOLD, instead of spinning on refusals that cost the
# shared cores its own and the hub's CPU. The SDK, which waits the delay, retries no later.
HOLD = 1.0
# Each hold is drawn from HOLD x (1 +- HOLD_SPREAD): calls refused together are answered apart, so
# a caller resending each at once does not come back as one burst a HOLD later (the calls of others
# would wait behind every burst).
HOLD_SPREAD = 0.5
# A caller's refused calls are answered at about this many a second however many it keeps held
# (the hold grows with them): one with more calls in flight than that costs the hub no more
# refusals, each of which costs its TLS, HTTP/2 and call set-up (~1 ms of CPU). A caller with
# fewer calls refused at once (the SDK's) is held HOLD as before.
HELD_RATE = 16.0
# The longer hold is bounded, and any hold by half the call's time left: a caller is told to retry,
# not left to its deadline.
MAX_HOLD = 4.0


def hold_time(
    held: int = 1, draw: Callable[[float, float], float] = random.uniform, *, left: float | None = None
) -> float:
    """How long one refusal is held when its caller has ``held`` refused calls held (this one too)
    and the call has ``left`` seconds before its deadline (None: no deadline)."""
    hold = max(HOLD, min(held / HELD_RATE, MAX_HOLD)) * draw(1.0 - HOLD_SPREAD, 1.0 + HOLD_SPREAD)
    return hold if left is None else min(hold, left / 2)


class InFlight:
    """Unary calls each caller has in progress; one more than ``limit`` is refused. Thread-safe
    (sync handlers run on the pool, coroutines on the loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def enter(self, key: str) -> bool:
        with self._lock:
            n = self._calls.get(key, 0)
            if n >= self.limit:
                return False
            self._calls[key] = n + 1
            return True

    def leave(self, key: str) -> None:
        with self._lock:
            n = self._calls.pop(key, 1) - 1
            if n > 0:
                self._calls[key] = n


def peer_host(peer: str) -> str:
    host = peer.split(":", 1)[1] if ":" in peer else peer
    return host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"


class Guard(grpc.aio.ServerInterceptor):
    def __init__(
        self,
        authenticator: Authenticator,
        limiter: RateLimiter | None,
        clock: Callable[[], float] = time.monotonic,
        in_flight: InFlight | None = None,
    ) -> None:
        self.authenticator = authenticator
        self.limiter = limiter
        self.in_flight = in_flight
        self.clock = clock
        self.refusals = RefusalLog()  # agents refused, logged per peer and reason now and then
        self.held: dict[str, int] = {}  # each caller's refused calls being held (on the loop only)

    async def hold(self, key: str, left: float | None = None) -> float:
        """Hold one of ``key``'s refused calls (``hold_time``); how long it was held."""
        n = self.held[key] = self.held.get(key, 0) + 1
        try:
            held = hold_time(n, left=left)
            await asyncio.sleep(held)
            return held
        finally:
            if (rest := self.held.pop(key) - 1) > 0:
                self.held[key] = rest

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method
        return _wrap(handler, method, self if not is_public(method) else None)

    def admit(self, method: str, context: Any) -> tuple[Principal, Callable[[], Principal], str]:
        """Authenticate the caller, check its role may make this call at all, and take its rate;
        with the caller, a way to identify it again later and the key its calls are counted by."""
        metadata = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
        token = bearer_token(metadata.get("authorization"))
        uris = [u.decode("utf-8", "replace") for u in (context.auth_context() or {}).get("peer_uri", [])]

        def identify() -> Principal:
            principal = self.authenticator.authenticate(
                token=token, cluster_uris=uris, agent_call=method == AGENT_CONNECT
            )
            rule = METHODS.get(method)
            if rule is None:
                raise PermissionDenied(f"{principal.describe()} may not call {method}")
            denial = decide(principal, rule.action)
            if denial is not None:
                raise PermissionDenied(denial)
            return principal

        principal = identify()
        key = principal.audit_name if principal.kind != "open" else "peer:" + peer_host(context.peer())
        if self.limiter is not None:
            wait = self.limiter.acquire(key, self.clock())
            if wait > 0:
                raise RateLimited(principal.describe(), wait, key)
        return principal, identify, key


def _status(exc: BaseException, method: str) -> tuple[grpc.StatusCode, str, tuple[tuple[str, str], ...]]:
    mapped = status_of(exc)
    if mapped is None:
        ref = uuid.uuid4().hex[:12]
        log.error("internal error %s in %s", ref, method, exc_info=exc)
        return grpc.StatusCode.INTERNAL, f"internal error (reference {ref} in the hub's log)", ()
    trailers: tuple[tuple[str, str], ...] = ()
    wait = getattr(exc, "wait", None)  # a refusal that will pass later says when
    if isinstance(exc, HubError) and isinstance(wait, float | int):
        trailers = ((RETRY_AFTER, str(max(1, math.ceil(wait * 1000)))),)
    return mapped[0], clip_message(mapped[1]), trailers


def _wrap(handler: Handler, method: str, guard: Guard | None) -> Handler:
    """The handler with each behavior run behind the guard (None: public, only decoding checked)."""
    safe = safe_deserializer(handler.request_deserializer)
    out = handler.response_serializer
    if handler.unary_unary is not None:
        fn = handler.unary_unary
        # Guarded: the request reaches the behavior as bytes, parsed once the caller is admitted.
        late = safe if guard is not None else None
        if _is_async(fn):
            wrapped = _async_unary(fn, method, guard, parse=late)
        else:
            wrapped = _sync_unary(fn, method, guard, parse=late)
        return grpc.unary_unary_rpc_method_handler(wrapped, safe if late is None else None, out)
    streams: list[tuple[Any, bool, Callable[..., Handler]]] = [
        (handler.stream_stream, True, grpc.stream_stream_rpc_method_handler),
        (handler.unary_stream, False, grpc.unary_stream_rpc_method_handler),
    ]
    for behavior, streamed, make in streams:
        if inspect.isasyncgenfunction(behavior):
            return make(_async_stream(behavior, method, guard, streamed=streamed), safe, out)
        if inspect.iscoroutinefunction(behavior):  # reader/writer style: responses go by context.write
            return make(_async_unary(behavior, method, guard, streamed=streamed), safe, out)
    # The hub serves no other kind of handler; refuse rather than serve one unguarded.
    return grpc.unary_unary_rpc_method_handler(_unserved(method))


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


def _unserved(method: str) -> Callable[[Any, Any], Any]:
    async def refuse(_request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not served")

    return refuse


@contextlib.contextmanager
def _admitted(guard: Guard | None, method: str, context: Any, *, counted: bool = False) -> Iterator[None]:
    """The caller admitted by ``guard`` (None: a public method) and known to the handler meanwhile;
    ``counted``: a unary call, one of the caller's calls in progress until it ends."""
    if guard is None:
        principal, recheck, key = None, None, ""
    else:
        principal, recheck, key = guard.admit(method, context)
    limit = guard.in_flight if guard is not None and counted else None
    if limit is not None and not limit.enter(key):
        raise TooManyCalls(principal.describe() if principal is not None else key, limit.limit, key)
    token, again = PRINCIPAL.set(principal), RECHECK.set(recheck)
    try:
        yield
    finally:
        PRINCIPAL.reset(token)
        RECHECK.reset(again)
        if limit is not None:
            limit.leave(key)


def _parsed(request: Any, parse: Callable[[bytes], Any] | None) -> Any:
    """A unary request: parsed now when its guard left it as bytes, and refused if it is bad."""
    if parse is not None:
        request = parse(request)
    refuse_undecodable(request)
    return request


def _prepared(request: Any, streamed: bool) -> Any:
    if streamed:
        return _checked(request)
    refuse_undecodable(request)
    return request


def _refused(guard: Guard | None, method: str, peer: str, code: grpc.StatusCode, message: str) -> None:
    """An agent stream refused: the operator learns why from the hub's log too."""
    if guard is not None and method == AGENT_CONNECT:
        guard.refusals.refused(peer_host(peer), code, message)


async def _checked(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for request in requests:
        refuse_undecodable(request)
        yield request


def _sync_unary(
    fn: Callable[..., Any], method: str, guard: Guard | None, *, parse: Callable[[bytes], Any] | None = None
) -> Callable[..., Any]:
    """Runs in the server's thread pool, like the handler it wraps."""

    def behavior(request: Any, context: Any) -> Any:
        try:
            if parse is None:
                refuse_undecodable(request)
            with _admitted(guard, method, context, counted=True):
                return fn(_parsed(request, parse), context)
        except Aborted:
            raise
        except Exception as exc:
            context.abort(*_status(exc, method))

    return behavior


def _async_unary(
    fn: Callable[..., Any],
    method: str,
    guard: Guard | None,
    *,
    streamed: bool = False,
    parse: Callable[[bytes], Any] | None = None,
) -> Callable[..., Any]:
    """A coroutine handler: a unary one, or a streaming one that writes through its context."""

    async def behavior(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            if parse is None:
                request = _prepared(request, streamed)
            with _admitted(guard, method, context, counted=not streamed):
                return await fn(request if parse is None else _parsed(request, parse), context)
        except Aborted:
            raise
        except Exception as exc:
            if streamed and _gone(context):
                log.debug("%s ended by its caller: %s", method, exc)
                return None
            if not streamed and guard is not None and isinstance(exc, RateLimited | TooManyCalls):
                held = await guard.hold(exc.key, context.time_remaining())
                exc.wait = max(0.001, exc.wait - held)
            await context.abort(*_status(exc, method))

    return behavior


def _async_stream(
    fn: Callable[..., AsyncIterator[Any]], method: str, guard: Guard | None, *, streamed: bool
) -> Callable[..., AsyncIterator[Any]]:
    async def behavior(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        # The peer is read while the call is live: asking a context whose call the server has
        # torn down (a stream failing as the hub stops) crashes grpc's core.
        peer = (context.peer() or "") if guard is not None and method == AGENT_CONNECT else ""
        try:
            request = _prepared(request, streamed)
            with _admitted(guard, method, context):
                async for response in fn(request, context):
                    yield response
        except Aborted:
            raise
        except Exception as exc:
            if _gone(context):
                # The caller cancelled (an SDK watch closed, a CLI stopped): what failed after that
                # (a write to the closed stream) is no error of the hub's, and there is no one to tell.
                log.debug("%s ended by its caller: %s", method, exc)
                return
            code, message, trailers = _status(exc, method)
            _refused(guard, method, peer, code, message)
            await context.abort(code, message, trailers)

    return behavior


def _gone(context: grpc.aio.ServicerContext[Any, Any]) -> bool:
    """Whether the caller has gone: gRPC cancels the call's task when its client cancels (the
    context does not say so until the call's status is sent)."""
    task = asyncio.current_task()
    return context.cancelled() or (task is not None and task.cancelling() > 0)
