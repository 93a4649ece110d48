"""AgentService.Connect: one bidirectional stream per member cluster.

The reader half takes what the agent says (inventory, heartbeats, acks, job status) and a recorder
writes it, many reports per transaction; the writer half delivers what the database says this
cluster should run, and fences off runs whose generation moved on. Nothing here decides
placement: the dispatcher did that, in the database.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc

from vglobal.api.v1 import agent_pb2, agent_pb2_grpc
from vglobal.hub import reports
from vglobal.hub.context import HubContext
from vglobal.hub.delivery import FENCE_INTERVAL, Courier
from vglobal.hub.notify import DELIVER, FENCE
from vglobal.hub.status import StatusRecorder
from vglobal.model.binding import FINISHED, reported
from vglobal.store.engine import session_scope

log = logging.getLogger(__name__)


@dataclass
class StreamState:
    cluster: str = ""
    registered: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    outbox: queue.Queue[agent_pb2.HubMessage] = field(default_factory=queue.Queue)
    # What the reader received, for the recorder to write in batches (None: the stream ended).
    inbox: queue.Queue[agent_pb2.AgentMessage | None] = field(default_factory=queue.Queue)
    # What the agent says it runs: uid -> generation (unfinished runs only).
    runs: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    courier: Courier | None = None
    fence: bool = True  # the next sync checks every run (see delivery.py)


class AgentServicer(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.recorder = StatusRecorder(ctx)

    def Connect(
        self, request_iterator: Iterator[agent_pb2.AgentMessage], context: grpc.ServicerContext
    ) -> Iterator[agent_pb2.HubMessage]:
        state = StreamState()
        for target, name in ((self._read, "agent-reader"), (self._record_all, "agent-recorder")):
            threading.Thread(target=target, args=(request_iterator, state), name=name, daemon=True).start()
        context.add_callback(state.closed.set)
        if not state.registered.wait(timeout=30.0) or state.closed.is_set():
            if not state.closed.is_set():
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the first message must be Register")
            return
        wakeups = self.ctx.wakeups
        seen, fences = wakeups.seq(DELIVER), wakeups.seq(FENCE)
        while not state.closed.is_set():
            fence, state.fence = state.fence or wakeups.seq(FENCE) != fences, False
            fences = wakeups.seq(FENCE)
            self._sync(state, fence)
            while True:
                try:
                    yield state.outbox.get_nowait()
                except queue.Empty:
                    break
            seen = wakeups.wait(DELIVER, seen, timeout=FENCE_INTERVAL)
        log.info("agent stream of cluster %s closed", state.cluster)

    def _read(self, messages: Iterator[agent_pb2.AgentMessage], state: StreamState) -> None:
        try:
            for msg in messages:
                if not state.registered.is_set() and msg.WhichOneof("body") != "register":
                    log.warning("agent sent %s before Register; closing", msg.WhichOneof("body"))
                    break
                state.inbox.put(msg)
                if msg.WhichOneof("body") == "register":
                    state.registered.wait()  # the recorder has it: the next reports are of this cluster
        except grpc.RpcError:
            pass
        except Exception:
            log.exception("agent stream of cluster %s failed", state.cluster or "?")
        finally:
            state.inbox.put(None)

    def _record_all(self, _messages: object, state: StreamState) -> None:
        """Record what the reader received: each Register on its own, the rest in batches of
        whatever arrived meanwhile (see reports.py)."""
        try:
            while (batch := self._next_batch(state)) is not None:
                if batch[0].WhichOneof("body") == "register":
                    self._register(batch[0].register, state)
                else:
                    self._record(batch, state)
        except Exception:
            log.exception("recording the reports of cluster %s failed", state.cluster or "?")
        finally:
            state.closed.set()
            self.ctx.wakeups.fire(DELIVER)

    @staticmethod
    def _next_batch(state: StreamState) -> list[agent_pb2.AgentMessage] | None:
        """A Register alone, or the reports received up to the next one; None once the stream ended."""
        first = state.inbox.get()
        if first is None:
            return None
        batch = [first]
        while first.WhichOneof("body") != "register" and len(batch) < reports.MAX_BATCH:
            try:
                msg = state.inbox.get_nowait()
            except queue.Empty:
                break
            if msg is None or msg.WhichOneof("body") == "register":
                state.inbox.queue.appendleft(msg)  # for the next batch
                break
            batch.append(msg)
        return batch

    def _register(self, reg: agent_pb2.Register, state: StreamState) -> None:
        state.cluster = reg.cluster
        self.recorder.register(reg)
        with state.lock:
            state.runs = {j.job_uid: j.generation for j in reg.jobs}
            if state.courier is None:
                state.courier = Courier(reg.cluster)
            state.fence = True
        state.outbox.put(
            agent_pb2.HubMessage(
                registered=agent_pb2.Registered(
                    heartbeat_interval_seconds=self.ctx.settings.heartbeat_interval
                )
            )
        )
        log.info(
            "cluster %s registered with %d nodes, running %d jobs", reg.cluster, len(reg.nodes), len(reg.jobs)
        )
        state.registered.set()
        self.ctx.wakeups.fire(DELIVER)

    def _record(self, batch: list[agent_pb2.AgentMessage], state: StreamState) -> None:
        # What the agent runs is noted before its reports are recorded: a sync in between must
        # not find a binding finished by a report while the run still shows here as running.
        with state.lock:
            for msg in batch:
                body = msg.WhichOneof("body")
                if body == "rejected":
                    state.runs.pop(msg.rejected.job_uid, None)
                elif body == "status":
                    st = msg.status
                    if reported(st.phase) in FINISHED:
                        state.runs.pop(st.job_uid, None)
                    else:
                        state.runs[st.job_uid] = st.generation
        with session_scope(self.ctx.sessions) as session:
            outcome = reports.record(
                state.cluster, batch, exclude_for=self.ctx.settings.exclude_for, session=session
            )
        if outcome.stale:
            state.fence = True  # a run that is not current reported: it may have to be stopped
            self.ctx.wakeups.fire(DELIVER)

    def _sync(self, state: StreamState, fence: bool) -> None:
        """Queue a Dispatch for each binding this cluster should run that this stream has not
        sent, and a Cancel for each run it must stop (see delivery.py)."""
        assert state.courier is not None
        with state.lock:
            runs = dict(state.runs)
        with session_scope(self.ctx.sessions) as session:
            out, ended = state.courier.sync(runs, fence=fence, session=session)
        if ended:
            with state.lock:
                for uid, gen in ended:
                    if state.runs.get(uid) == gen:
                        del state.runs[uid]
        for msg in out:
            state.outbox.put(msg)
