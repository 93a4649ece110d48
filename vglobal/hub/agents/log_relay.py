"""Log requests from API callers to the agents' streams of this hub, and their chunks back.

A caller's StreamLogs asks the agent of the job's cluster, over the agent stream this hub holds
(AgentService.Connect), for each pod's output: a LogRequest goes out, LogChunks of its request id
come back and are handed to the caller's queue. Everything here runs on the hub's gRPC loop. A
stream held by another hub replica is not reached: the call is UNAVAILABLE and names the cluster
(a retry may land on the replica that holds it). Bounds: streams per caller, and a chunk queue
per request (an agent that outruns a slow caller is cut off rather than buffered without end).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from vglobal.api.v1 import agent_pb2
from vglobal.hub.errors import Coded, TooLarge

MAX_STREAMS_PER_CALLER = 64  # one caller following every pod of a 64-pod job
QUEUE_CHUNKS = 256  # chunks buffered per request before the request is cut off


@dataclass(eq=False)
class LogStream:
    """One pod's log request: its chunks (None once the stream ended) and who asked."""

    request_id: str
    cluster: str
    caller: str
    chunks: asyncio.Queue[agent_pb2.LogChunk | None] = field(
        default_factory=lambda: asyncio.Queue(QUEUE_CHUNKS)
    )
    ended: str = ""  # why the stream ended before its eof ("": it did not)


class Unavailable(Coded):
    def __init__(self, message: str) -> None:
        super().__init__(grpc.StatusCode.UNAVAILABLE, message)


class LogRelay:
    """``send(cluster, message)`` puts a HubMessage on that cluster's stream here (False: none)."""

    def __init__(self) -> None:
        self.send: Callable[[str, agent_pb2.HubMessage], bool] = lambda _c, _m: False
        self.requests: dict[str, LogStream] = {}
        self.per_caller: dict[str, int] = {}

    def open(self, cluster: str, caller: str, req: agent_pb2.LogRequest) -> LogStream:
        if self.per_caller.get(caller, 0) >= MAX_STREAMS_PER_CALLER:
            raise TooLarge(f"{caller} reads {MAX_STREAMS_PER_CALLER} log streams already; end one first")
        stream = LogStream(uuid.uuid4().hex, cluster, caller)
        req.request_id = stream.request_id
        if not self.send(cluster, agent_pb2.HubMessage(log_request=req)):
            raise Unavailable(
                f'cluster "{cluster}" has no agent stream on this hub: its agent is disconnected '
                "(the cluster is gone or unreachable) or connected to another hub replica (retry)"
            )
        self.requests[stream.request_id] = stream
        self.per_caller[caller] = self.per_caller.get(caller, 0) + 1
        return stream

    def close(self, stream: LogStream) -> None:
        """The caller is done with it: the agent stops reading (if the stream did not end)."""
        if self.requests.pop(stream.request_id, None) is None:
            return
        n = self.per_caller.get(stream.caller, 1) - 1
        if n > 0:
            self.per_caller[stream.caller] = n
        else:
            self.per_caller.pop(stream.caller, None)
        self.send(
            stream.cluster, agent_pb2.HubMessage(log_cancel=agent_pb2.LogCancel(request_id=stream.request_id))
        )

    def deliver(self, chunk: agent_pb2.LogChunk) -> None:
        """A chunk from an agent; one for a request no one waits for is dropped."""
        stream = self.requests.get(chunk.request_id)
        if stream is None or stream.ended:
            return
        try:
            stream.chunks.put_nowait(chunk)
        except asyncio.QueueFull:
            self._end(stream, "the reader fell behind the pod's output; read again with --since")

    def stream_ended(self, cluster: str) -> None:
        """The cluster's agent stream ended here: its log streams end with it."""
        for stream in [s for s in self.requests.values() if s.cluster == cluster]:
            self._end(stream, f'the agent of cluster "{cluster}" disconnected')

    @staticmethod
    def _end(stream: LogStream, why: str) -> None:
        stream.ended = why
        while not stream.chunks.empty():  # room for the end mark
            stream.chunks.get_nowait()
        stream.chunks.put_nowait(None)
