"""The one place a failed call becomes the SDK's error: its gRPC code and the hub's message."""

from __future__ import annotations

import re

import grpc

from vglobal.sdk.retries import VGlobalError
from vglobal.sdk.tls_hint import plaintext_hint, tls_mismatch

__all__ = ["VGlobalError", "hub_error", "refused_item"]

# How SubmitJobs names the one document it refused (the call stored nothing).
_ITEM = re.compile(r"^jobs\[(\d+)\]: ")


def hub_error(
    exc: grpc.RpcError, *, plaintext_to: str | None = None, tls_to: str | None = None
) -> VGlobalError:
    """``exc`` as ``VGlobalError``. ``plaintext_to`` / ``tls_to``: the hub a plaintext / TLS channel
    dialled; a hub that could not be reached there is asked whether it speaks TLS, and the message
    then says what to do (a blocking probe: the asyncio client does not ask)."""
    code: grpc.StatusCode = exc.code()
    message = exc.details() or code.name
    if code == grpc.StatusCode.UNAVAILABLE and plaintext_to is not None:
        message += plaintext_hint(plaintext_to)
    if code == grpc.StatusCode.UNAVAILABLE and tls_to is not None:
        message = tls_mismatch(tls_to, message) or message
    return VGlobalError(code, message)


def refused_item(exc: VGlobalError, size: int) -> tuple[int, VGlobalError] | None:
    """Which document of a SubmitJobs call of ``size`` the hub refused, with its own error; None
    when the call failed as a whole."""
    m = _ITEM.match(exc.message)
    if m is None or int(m.group(1)) >= size:
        return None
    return int(m.group(1)), VGlobalError(exc.code, exc.message[m.end() :])
