"""Domain errors and how each maps to a gRPC status code."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import grpc

from vglobal.model.errors import ManifestError
from vglobal.model.manifests import ManifestTooLarge

log = logging.getLogger(__name__)


class HubError(Exception):
    code = grpc.StatusCode.INTERNAL


class NotFound(HubError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(HubError):
    code = grpc.StatusCode.ALREADY_EXISTS


class FailedPrecondition(HubError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class InvalidArgument(HubError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class TooLarge(HubError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Coded(HubError):
    """An error carrying the status code of the error it rephrases."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def look_up(kind: str, key: str, read: Callable[[], T | None], *, wanted: str = "") -> T:
    """The ``kind`` called ``key``, as ``read`` finds it. No key is INVALID_ARGUMENT on field
    ``name`` (``wanted`` says what was expected, by default a name); nothing found is NOT_FOUND."""
    if not key:
        raise InvalidArgument(f"name: {wanted or f'a {kind} name'} is required")
    found = read()
    if found is None:
        raise NotFound(f'{kind} "{key}" not found')
    return found


def status_of(exc: BaseException) -> tuple[grpc.StatusCode, str] | None:
    if isinstance(exc, HubError):
        return exc.code, str(exc)
    if isinstance(exc, ManifestTooLarge):
        return grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)
    if isinstance(exc, ManifestError):
        return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
    return None


def raise_prefixed(exc: Exception, prefix: str) -> NoReturn:
    """Re-raise a domain error with its message prefixed (e.g. by the batch index); others unchanged."""
    mapped = status_of(exc)
    if mapped is None or not prefix:
        raise exc
    raise Coded(mapped[0], prefix + mapped[1]) from exc


def rpc(method: F) -> F:
    """Turn domain errors raised by a unary handler into the matching gRPC status."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as exc:
            mapped = status_of(exc)
            if mapped is None:
                log.exception("internal error in %s", method.__name__)
                context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}")
            else:
                context.abort(mapped[0], mapped[1])

    return wrapper  # type: ignore[return-value]
