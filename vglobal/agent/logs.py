"""The agent's side of log streams: a pod's output read from the cluster and sent to the hub.

Each LogRequest is served by a thread of its own, never by the scheduling loop: the hub link's
thread hands requests here as they arrive, and chunks go back on the same stream. Bounds: how many
streams are read at once (beyond it a request is answered with an error at once), lines and bytes
per stream, the rate of lines, and the length of one line. A stream ends with a chunk whose eof
(and, on failure, error) is set, or silently when the hub cancels it or the stream it came on ends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from vglobal.api.v1 import agent_pb2 as pb

log = logging.getLogger(__name__)


class LogError(Exception):
    """The output cannot be read (no such pod or container, the API refused): said to the caller."""


class LogReader(Protocol):
    def read(self, req: pb.LogRequest, stop: threading.Event) -> Iterator[list[str]]:
        """The pod's lines (without their newline) in batches as they come, following while
        ``req.follow`` until ``stop``; raises LogError when they cannot be read."""
        ...


@dataclass(frozen=True)
class LogLimits:
    streams: int = 64  # read at once by this agent
    lines: int = 1_000_000  # per stream
    bytes: int = 64 * 1024 * 1024  # per stream
    rate: float = 5_000.0  # lines per second per stream
    line_bytes: int = 16 * 1024  # a longer line is cut
    chunk_lines: int = 500  # lines per chunk at most


Send = Callable[[int, pb.AgentMessage], bool]


class LogServer:
    def __init__(self, reader: LogReader, limits: LogLimits | None = None) -> None:
        self.reader = reader
        self.limits = limits or LogLimits()
        self._lock = threading.Lock()
        self._streams: dict[tuple[int, str], threading.Event] = {}  # (session, request id) -> stop

    def active(self) -> int:
        with self._lock:
            return len(self._streams)

    def handle(self, session: int, msg: pb.HubMessage, send: Send) -> None:
        """A log_request or log_cancel from the hub (the hub link's thread: returns at once)."""
        if msg.HasField("log_cancel"):
            with self._lock:
                stop = self._streams.pop((session, msg.log_cancel.request_id), None)
            if stop is not None:
                stop.set()
            return
        req = msg.log_request
        key = (session, req.request_id)
        with self._lock:
            full = len(self._streams) >= self.limits.streams
            if not full:
                self._streams[key] = stop = threading.Event()
        if full:
            self._end(
                session, req, send, f"the agent reads {self.limits.streams} log streams already; retry later"
            )
            return
        threading.Thread(
            target=self._serve, args=(session, req, send, stop), name=f"log-{req.pod}", daemon=True
        ).start()

    def session_ended(self, session: int) -> None:
        """The hub stream ``session`` is gone: every stream that came on it stops."""
        with self._lock:
            keys = [k for k in self._streams if k[0] == session]
            stops = [self._streams.pop(k) for k in keys]
        for stop in stops:
            stop.set()

    def stop_all(self) -> None:
        with self._lock:
            stops = list(self._streams.values())
            self._streams.clear()
        for stop in stops:
            stop.set()

    @staticmethod
    def _end(session: int, req: pb.LogRequest, send: Send, error: str = "") -> None:
        send(
            session, pb.AgentMessage(log_chunk=pb.LogChunk(request_id=req.request_id, eof=True, error=error))
        )

    def _serve(self, session: int, req: pb.LogRequest, send: Send, stop: threading.Event) -> None:
        error = ""
        try:
            self._pump(session, req, send, stop)
        except LogError as exc:
            error = str(exc)
        except Exception as exc:  # a reader's bug must not take the agent down
            log.exception("log stream of pod %s/%s failed", req.namespace, req.pod)
            error = f"reading the log failed: {type(exc).__name__}"
        finally:
            with self._lock:
                still = self._streams.pop((session, req.request_id), None) is not None
        if still:  # not cancelled: the caller waits for the end
            self._end(session, req, send, error)

    def _pump(self, session: int, req: pb.LogRequest, send: Send, stop: threading.Event) -> None:
        lim = self.limits
        count = size = 0
        started = time.monotonic()
        for batch in self.reader.read(req, stop):
            if stop.is_set():
                return
            lines = [
                line if len(line) <= lim.line_bytes else line[: lim.line_bytes] + " [cut]" for line in batch
            ]
            room = lim.lines - count
            over = len(lines) > room
            lines = lines[: max(0, room)]
            count += len(lines)
            size += sum(len(line) + 1 for line in lines)
            over = over or size > lim.bytes
            for i in range(0, len(lines), lim.chunk_lines):
                chunk = pb.LogChunk(request_id=req.request_id, lines=lines[i : i + lim.chunk_lines])
                if not send(session, pb.AgentMessage(log_chunk=chunk)):
                    return  # the hub stream is gone
            if over:
                raise LogError(
                    f"the stream reached its bound ({lim.lines} lines or {lim.bytes} bytes); "
                    "use --tail or --since"
                )
            ahead = count / lim.rate - (time.monotonic() - started)
            if ahead > 0 and stop.wait(ahead):
                return
