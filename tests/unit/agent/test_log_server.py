"""The agent's log streams: bounded in how many run at once, in lines, and ended by a cancel."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

from vglobal.agent.logs import LogLimits, LogServer
from vglobal.api.v1 import agent_pb2 as pb


class Endless:
    """A pod that writes a line per batch until the stream is stopped."""

    def read(self, req: pb.LogRequest, stop: threading.Event) -> Iterator[list[str]]:
        n = 0
        while not stop.wait(0.01):
            n += 1
            yield [f"line {n}"]


def request(rid: str) -> pb.HubMessage:
    return pb.HubMessage(log_request=pb.LogRequest(request_id=rid, namespace="default", pod="p", follow=True))


def collect() -> tuple[queue.Queue[pb.LogChunk], object]:
    got: queue.Queue[pb.LogChunk] = queue.Queue()

    def send(_session: int, msg: pb.AgentMessage) -> bool:
        got.put(msg.log_chunk)
        return True

    return got, send


def test_beyond_its_streams_a_request_is_refused_at_once_and_a_cancel_frees_a_place() -> None:
    server = LogServer(Endless(), LogLimits(streams=2))
    got, send = collect()
    server.handle(1, request("a"), send)  # type: ignore[arg-type]
    server.handle(1, request("b"), send)  # type: ignore[arg-type]
    server.handle(1, request("c"), send)  # type: ignore[arg-type]
    refused = next(c for c in iter(lambda: got.get(timeout=5), None) if c.request_id == "c")
    assert refused.eof and "reads 2 log streams already" in refused.error
    server.handle(1, pb.HubMessage(log_cancel=pb.LogCancel(request_id="a")), send)  # type: ignore[arg-type]
    assert server.active() == 1
    server.handle(1, request("d"), send)  # type: ignore[arg-type]
    first = next(c for c in iter(lambda: got.get(timeout=5), None) if c.request_id == "d")
    assert first.lines and not first.error
    server.session_ended(1)
    assert server.active() == 0


def test_a_stream_ends_with_an_error_at_its_line_bound() -> None:
    server = LogServer(Endless(), LogLimits(lines=5))
    got, send = collect()
    server.handle(7, request("x"), send)  # type: ignore[arg-type]
    lines: list[str] = []
    while True:
        chunk = got.get(timeout=5)
        lines += chunk.lines
        if chunk.eof:
            break
    assert lines == [f"line {n}" for n in range(1, 6)]
    assert "reached its bound (5 lines" in chunk.error
