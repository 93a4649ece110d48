"""The Python SDK: typed clients over the hub's gRPC stubs, blocking (``Client``) and asyncio
(``AsyncClient``), with one error type (``VGlobalError``). ``vglobal.client`` and ``vglobal.aio``
re-export them."""

from vglobal.dial import DEFAULT_HUB, Dial, DialError
from vglobal.sdk.aio import AsyncClient
from vglobal.sdk.client import Client, default_hub
from vglobal.sdk.retries import VGlobalError
from vglobal.sdk.watch import EventType, JobEvent, JobWatch

__all__ = [
    "DEFAULT_HUB",
    "AsyncClient",
    "Client",
    "Dial",
    "DialError",
    "EventType",
    "JobEvent",
    "JobWatch",
    "VGlobalError",
    "default_hub",
]
