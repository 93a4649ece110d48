"""The hub's gRPC server: grpc.aio on an event loop in a thread of its own.

Agent streams are coroutines on that loop, so however many stay open they hold no thread; the
unary API handlers stay synchronous (SQLAlchemy) and run in a bounded thread pool.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import grpc

T = TypeVar("T")

# gRPC core answers CANCELLED, and logs nothing, to a call that arrives while more than 1,000
# others wait for the server to take them (at random up to 3,000, then every one), or that waited
# 30 s. The loop takes calls one at a time, so a hub a few seconds behind a few hundred calls a
# second met that: a third of the submits came back CANCELLED that no one had cancelled. Calls now
# wait for the loop as long as their deadline allows (DEADLINE_EXCEEDED; five minutes at most), and
# a caller beyond its share hears RESOURCE_EXHAUSTED from the guard once taken. The bound stays:
# each waiting call may hold a stream's flow-control window of its request.
WAITING_CALLS = (
    ("grpc.server.max_pending_requests", 10_000),
    ("grpc.server.max_pending_requests_hard_limit", 20_000),
    ("grpc.server_max_unrequested_time_in_server", 300),
)


def server_credentials(cert: Path, key: Path, *, client_ca: Path | None = None) -> grpc.ServerCredentials:
    """TLS with the hub's certificate; with ``client_ca``, every client must present a certificate
    signed by it (gRPC's Python server cannot ask for an optional one)."""
    pair = [(key.read_bytes(), cert.read_bytes())]
    if client_ca is None:
        return grpc.ssl_server_credentials(pair)
    return grpc.ssl_server_credentials(
        pair, root_certificates=client_ca.read_bytes(), require_client_auth=True
    )


class LoopServer:
    def __init__(
        self,
        *,
        workers: int,
        interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grpc")
        # A coroutine handler's database work (asyncio.to_thread) shares the unary API's bound.
        self.loop.set_default_executor(self.pool)
        self._thread = threading.Thread(target=self.loop.run_forever, name="grpc-loop", daemon=True)
        self._thread.start()
        self.server: grpc.aio.Server = self.run(self._create(list(interceptors), list(options)))

    async def _create(
        self, interceptors: list[grpc.aio.ServerInterceptor], options: list[tuple[str, Any]]
    ) -> grpc.aio.Server:
        options = [*WAITING_CALLS, *options]
        return grpc.aio.server(migration_thread_pool=self.pool, interceptors=interceptors, options=options)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def add_port(self, address: str, credentials: grpc.ServerCredentials | None = None) -> int:
        async def add() -> int:
            if credentials is None:
                return self.server.add_insecure_port(address)
            return self.server.add_secure_port(address, credentials)

        port = self.run(add())
        if port == 0:
            raise RuntimeError(f"cannot listen on {address}")
        return port

    def start(self) -> None:
        self.run(self.server.start())

    def stop(self, grace: float) -> None:
        if self.loop.is_running():
            self.run(self.server.stop(grace))
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=grace + 5.0)
        self.pool.shutdown(wait=False, cancel_futures=True)
