"""``from vglobal.aio import AsyncClient`` as before: the SDK lives in ``vglobal.sdk``."""

from vglobal.sdk.aio import OWN_TOKEN, AsyncClient

__all__ = ["OWN_TOKEN", "AsyncClient"]
