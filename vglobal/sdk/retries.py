"""The SDK's one error type and its retry policy, shared by the blocking and the asyncio client."""

from __future__ import annotations

import grpc
from tenacity import RetryCallState, wait_exponential_jitter

__all__ = ["BACKOFF", "VGlobalError", "hopeless", "refused", "retry_after", "retryable", "wait_retry"]


class VGlobalError(Exception):
    """A failed call: ``code`` is the gRPC status code, the message is the hub's."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


def retry_after(exc: BaseException | None) -> float | None:
    """The delay a rate-limited call was told to wait (RESOURCE_EXHAUSTED with ``retry-after-ms``)."""
    if not isinstance(exc, grpc.RpcError) or exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    trailers = getattr(exc, "trailing_metadata", lambda: None)() or ()
    for key, value in trailers:
        if key == "retry-after-ms" and str(value).isdigit():
            return int(value) / 1000
    return None


# What gRPC itself says when the request is too large for the hub to read: the same request can
# never pass, so it is not retried (a token or a message that size is a mistake to report).
_TOO_LARGE = ("metadata size", "larger than max", "message too large", "exceeds hard limit")


def hopeless(exc: BaseException) -> bool:
    """A RESOURCE_EXHAUSTED that no retry can cure: the request is too large, not the hub busy."""
    if not isinstance(exc, grpc.RpcError) or exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return False
    if retry_after(exc) is not None:
        return False
    details = str(getattr(exc, "details", lambda: "")() or "").lower()
    return any(words in details for words in _TOO_LARGE)


def refused(exc: BaseException) -> bool:
    """The hub turned the call away before doing anything (over its rate, or too many calls in
    progress): safe to send again even when the call is not idempotent."""
    return retry_after(exc) is not None


def retryable(exc: BaseException) -> bool:
    if hopeless(exc):
        return False
    if retry_after(exc) is not None:
        return True
    return isinstance(exc, grpc.RpcError) and exc.code() in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    )


def wait_retry(state: RetryCallState) -> float:
    """The hub's own delay after a rate limit (at most 10 s), else jittered exponential back-off."""
    told = retry_after(state.outcome.exception()) if state.outcome is not None else None
    return min(told, 10.0) if told is not None else BACKOFF(state)


BACKOFF = wait_exponential_jitter(multiplier=0.2, max=3.0)
