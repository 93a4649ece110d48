"""The gRPC stream to the hub, kept open by a background thread.

The thread only moves messages: what arrives goes to ``inbox`` as ``(kind, session, message)``
tuples for the agent's main loop; what the loop sends goes out on the current stream. A broken
stream is reopened with jittered exponential back-off (tenacity); the back-off starts afresh
after a stream that got as far as ``Registered``. A hub that refuses the agent (its credentials,
its identity, TLS) is retried less often, at most every ``refusal.REFUSED_MAX`` seconds, and each
failure is logged with what it means and when the next attempt is (see ``refusal``).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import grpc
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, wait_random_exponential

from vglobal.agent import refusal
from vglobal.agent.logs import LogServer
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.api.v1 import agent_pb2_grpc as pb_grpc
from vglobal.dial import Dial

log = logging.getLogger(__name__)

Inbox = queue.Queue[tuple[str, int, Any]]
# Messages in one AgentMessage.batch at most (a status is a few hundred bytes: far below the
# hub's 4 MiB message limit).
MAX_BATCH = 500


class StreamLost(Exception):
    """The stream failed or ended before the hub registered us."""


def _status(exc: BaseException | None) -> tuple[grpc.StatusCode | None, str]:
    if isinstance(exc, grpc.RpcError) and hasattr(exc, "code"):
        return exc.code(), str(exc.details() or "")
    return None, str(exc or "")


class HubLink:
    def __init__(
        self,
        target: Dial | str,
        inbox: Inbox,
        *,
        backoff_max: float = 5.0,
        backoff_multiplier: float = 0.2,
        cluster: str = "",
        logs: LogServer | None = None,
    ) -> None:
        self.dial = target if isinstance(target, Dial) else Dial(target)
        self.target = self.dial.target
        self.inbox = inbox
        self.backoff_max = backoff_max
        self.backoff_multiplier = backoff_multiplier
        self.cluster = cluster
        self.logs = logs  # serves log requests on threads of its own, off the main loop
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._session = 0
        self._outbox: queue.Queue[list[pb.AgentMessage] | None] | None = None
        self._call: Any = None
        self._thread = threading.Thread(target=self._loop, name="hub-link", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            if self._outbox is not None:
                self._outbox.put(None)
            if self._call is not None:
                self._call.cancel()
        self._thread.join(timeout)

    def send(self, session: int, msg: pb.AgentMessage) -> bool:
        """Queue ``msg`` on the stream ``session``; False if that stream is gone."""
        return self.send_all(session, [msg])

    def send_all(self, session: int, msgs: Sequence[pb.AgentMessage]) -> bool:
        """Queue ``msgs`` on the stream ``session``, to go together (as one batch, to a hub that
        takes batches); False if that stream is gone."""
        with self._lock:
            if session != self._session or self._outbox is None:
                return False
            if msgs:
                self._outbox.put(list(msgs))
            return True

    # ---- the thread

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                for attempt in Retrying(
                    wait=self._wait,
                    retry=retry_if_exception_type((StreamLost, grpc.RpcError, OSError)),
                    stop=self._stopped,
                    sleep=self._sleep,
                    before_sleep=self._log_retry,
                ):
                    with attempt:
                        self._run_stream()
            except RetryError:
                return

    def _wait(self, state: RetryCallState) -> float:
        """Seconds until the next attempt: longer, up to a cap, while the hub refuses us."""
        code, details = _status(state.outcome.exception() if state.outcome else None)
        if refusal.is_refusal(code, details):
            cap = max(self.backoff_max, refusal.REFUSED_MAX)
            return float(wait_random_exponential(multiplier=1.0, max=cap)(state))
        return float(wait_random_exponential(multiplier=self.backoff_multiplier, max=self.backoff_max)(state))

    def _log_retry(self, state: RetryCallState) -> None:
        code, details = _status(state.outcome.exception() if state.outcome else None)
        wait = state.next_action.sleep if state.next_action else 0.0
        what = refusal.advice(code, details, self.dial, self.cluster)
        log.warning(
            "hub %s: %s; attempt %d failed, retrying in %.1fs", self.target, what, state.attempt_number, wait
        )

    def _stopped(self, _state: RetryCallState) -> bool:
        return self._stop.is_set()

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def _run_stream(self) -> None:
        outbox: queue.Queue[list[pb.AgentMessage] | None] = queue.Queue()
        batches = threading.Event()  # this stream's hub reads AgentMessage.batch
        channel = self.dial.channel()
        with self._lock:
            if self._stop.is_set():
                channel.close()
                return
            self._session += 1
            session = self._session
            self._outbox = outbox
            self._call = call = pb_grpc.AgentServiceStub(channel).Connect(self._requests(outbox, batches))
        registered = False
        try:
            self.inbox.put(("connected", session, None))
            for msg in call:
                kind = msg.WhichOneof("body")
                if kind == "registered":
                    registered = True
                    if msg.registered.takes_batches:
                        batches.set()
                if kind == "batch":  # what one sync delivered: each handled as if sent alone
                    for inner in msg.batch.messages:
                        self._take(session, inner)
                else:
                    self._take(session, msg)
        except grpc.RpcError as exc:
            if self._stop.is_set():
                return
            if not registered:
                raise
            code, details = _status(exc)
            log.warning("hub stream to %s lost (%s: %s); reconnecting", self.target,
                        code.name if code else "error", details)  # fmt: skip
        finally:
            with self._lock:
                self._outbox = None
                self._call = None
            outbox.put(None)
            if self.logs is not None:
                self.logs.session_ended(session)
            call.cancel()
            channel.close()
            self.inbox.put(("disconnected", session, None))
        if not registered and not self._stop.is_set():
            raise StreamLost("the hub closed the stream before registering this agent")

    def _take(self, session: int, msg: pb.HubMessage) -> None:
        """Log requests go to the log server at once; the rest to the main loop."""
        if msg.WhichOneof("body") in ("log_request", "log_cancel"):
            if self.logs is not None:
                self.logs.handle(session, msg, self.send)
            elif msg.HasField("log_request"):
                rid = msg.log_request.request_id
                end = pb.LogChunk(request_id=rid, eof=True, error="this agent serves no logs")
                self.send(session, pb.AgentMessage(log_chunk=end))
            return
        self.inbox.put(("message", session, msg))

    @staticmethod
    def _requests(
        outbox: queue.Queue[list[pb.AgentMessage] | None], batches: threading.Event
    ) -> Iterator[pb.AgentMessage]:
        """What the loop queued, in order; to a hub that takes batches, what was queued together
        and whatever else is queued by the time the stream can send go as one message (a stream
        message costs the hub more than the report in it). A Register always goes alone."""
        while True:
            group = outbox.get()
            if group is None:
                return
            ended = False
            while batches.is_set() and len(group) < MAX_BATCH:
                try:
                    more = outbox.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    ended = True
                    break
                group += more
            if len(group) > 1 and batches.is_set() and not any(m.HasField("register") for m in group):
                for i in range(0, len(group), MAX_BATCH):
                    part = group[i : i + MAX_BATCH]
                    yield pb.AgentMessage(batch=pb.AgentBatch(messages=part)) if len(part) > 1 else part[0]
            else:
                yield from group
            if ended:
                return
