"""Calls that pile up while the hub's loop is busy wait their turn: none is answered CANCELLED by
gRPC core's own backlog limit (1,000 waiting by default), which the caller did not ask for and the
hub never logged (real aio server, no database)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from vglobal.hub.grpc_server import LoopServer

CALLS = 2_500  # waiting at once: past the 1,000 at which core began refusing at random


@pytest.fixture
def served() -> Iterator[tuple[str, LoopServer]]:
    server = LoopServer(workers=2)
    first = True

    async def answer(_request: bytes, _context: Any) -> bytes:
        nonlocal first
        if first:  # the loop held while the burst arrives, as a busy hub's is
            first = False
            time.sleep(0.5)
        return b"ok"

    handler = grpc.unary_unary_rpc_method_handler(answer)
    server.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"Call": handler}),))
    port = server.add_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", server
    server.stop(0.5)


def test_a_burst_behind_a_busy_loop_is_served_not_cancelled(served: tuple[str, LoopServer]) -> None:
    target, _ = served

    async def burst() -> Counter[str]:
        async with grpc.aio.insecure_channel(target) as channel:
            call = channel.unary_unary("/t.T/Call")

            async def one() -> str:
                try:
                    await call(b"x", timeout=60)
                    return "OK"
                except grpc.aio.AioRpcError as exc:
                    return exc.code().name

            return Counter(await asyncio.gather(*(one() for _ in range(CALLS))))

    assert asyncio.run(burst()) == {"OK": CALLS}
