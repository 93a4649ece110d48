"""A TCP proxy on loopback whose traffic can be stalled and resumed, as a network path that
blackholes for a while and then passes again: while stalled nothing is read or written either way
(bytes wait in the kernel's buffers, new connections are accepted and wait too), on resume
everything flows on, unless an end gave up on its connection meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from types import TracebackType


class StallProxy:
    """``listen`` (host:port, given by the caller) forwards to ``upstream``; runs on its own thread."""

    def __init__(self, listen: str, upstream: str) -> None:
        self.listen, self.upstream = listen, upstream
        self.connections = 0  # accepted so far (a client that reconnected counts again)
        self._loop = asyncio.new_event_loop()
        self._flowing = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="stall-proxy", daemon=True)

    def start(self) -> StallProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._open(), self._loop).result(timeout=10)
        return self

    async def _open(self) -> None:
        self._flowing.set()
        host, port = self.listen.rsplit(":", 1)
        self._server = await asyncio.start_server(self._serve, host, int(port), reuse_address=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        host, port = self.upstream.rsplit(":", 1)
        try:
            await self._flowing.wait()
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        self._writers -= {writer, up_writer}

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await self._flowing.wait()
                data = await reader.read(65536)
                if not data:
                    break
                await self._flowing.wait()  # read before the stall: held until it ends
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    def stall(self) -> None:
        self._loop.call_soon_threadsafe(self._flowing.clear)

    def resume(self) -> None:
        self._loop.call_soon_threadsafe(self._flowing.set)

    def close(self) -> None:
        async def shut() -> None:
            self._flowing.set()
            if self._server is not None:
                self._server.close()
            for writer in self._writers:
                writer.close()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            _, pending = await asyncio.wait(others, timeout=5) if others else ((), ())
            for task in pending:
                task.cancel()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> StallProxy:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
