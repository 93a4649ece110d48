"""The dashboard's one channel to the hub: the SDK's asyncio client, each call made with the
caller's own bearer token (``call(fn, request, token)``), never with the dashboard's."""

from __future__ import annotations

from dataclasses import replace

from vglobal.api.v1 import queues_pb2
from vglobal.dial import Dial, DialError, is_loopback
from vglobal.sdk import AsyncClient, VGlobalError

TIMEOUT = 15.0


class Gateway(AsyncClient):
    """The hub's services, called as a given caller (``token`` None: no credentials at all)."""

    def __init__(self, dial: Dial) -> None:
        if not dial.tls and not is_loopback(dial.target):
            raise DialError(
                f"refusing to send callers' tokens in plaintext to {dial.target}: give --ca-file "
                "(VGLOBAL_CA_FILE) to reach the hub over TLS"
            )
        # A page waits for no retries: the caller reloads it.
        super().__init__(dial=replace(dial, token=None), timeout=TIMEOUT, retries=1)

    async def is_open(self) -> bool:
        """Whether the hub serves callers without credentials (loopback, no auth config)."""
        try:
            await self.call(self.queues.ListQueues, queues_pb2.ListQueuesRequest(), None)
        except VGlobalError:
            return False
        return True
