"""AgentService.Connect: one bidirectional stream per member cluster.

The reader half records what the agent says (inventory, heartbeats, acks, job status); the writer half
delivers what the database says this cluster should run, and fences off runs whose generation moved
on. Nothing here decides placement: the dispatcher did that, in the database.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc

from vglobal.api.v1 import agent_pb2, agent_pb2_grpc
from vglobal.hub.context import HubContext
from vglobal.hub.notify import DELIVER
from vglobal.hub.status import StatusRecorder
from vglobal.model.binding import FINISHED, BindingRef, reported, stop_reason
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo.events import NewEvent

log = logging.getLogger(__name__)

SYNC_INTERVAL = 1.0


@dataclass
class StreamState:
    cluster: str = ""
    registered: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    outbox: queue.Queue[agent_pb2.HubMessage] = field(default_factory=queue.Queue)
    # What the agent says it runs: uid -> generation (unfinished runs only).
    runs: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    sent_dispatch: set[tuple[str, int]] = field(default_factory=set)
    sent_cancel: set[tuple[str, int]] = field(default_factory=set)


class AgentServicer(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.recorder = StatusRecorder(ctx)

    def Connect(
        self, request_iterator: Iterator[agent_pb2.AgentMessage], context: grpc.ServicerContext
    ) -> Iterator[agent_pb2.HubMessage]:
        state = StreamState()
        reader = threading.Thread(
            target=self._read, args=(request_iterator, state), name="agent-reader", daemon=True
        )
        reader.start()
        context.add_callback(state.closed.set)
        if not state.registered.wait(timeout=30.0) or state.closed.is_set():
            if not state.closed.is_set():
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the first message must be Register")
            return
        seen = self.ctx.wakeups.seq(DELIVER)
        while not state.closed.is_set():
            self._sync(state)
            while True:
                try:
                    yield state.outbox.get_nowait()
                except queue.Empty:
                    break
            seen = self.ctx.wakeups.wait(DELIVER, seen, timeout=SYNC_INTERVAL)
            while not state.outbox.empty():
                yield state.outbox.get_nowait()
        log.info("agent stream of cluster %s closed", state.cluster)

    def _read(self, messages: Iterator[agent_pb2.AgentMessage], state: StreamState) -> None:
        try:
            for msg in messages:
                body = msg.WhichOneof("body")
                if body == "register":
                    self._register(msg.register, state)
                elif not state.registered.is_set():
                    log.warning("agent sent %s before Register; closing", body)
                    break
                elif body == "heartbeat":
                    self.recorder.heartbeat(state.cluster, msg.heartbeat)
                elif body == "accepted":
                    self.recorder.accepted(state.cluster, msg.accepted)
                elif body == "rejected":
                    with state.lock:  # first: see _status
                        state.runs.pop(msg.rejected.job_uid, None)
                    self.recorder.rejected(state.cluster, msg.rejected)
                elif body == "status":
                    self._status(msg.status, state)
                if body in ("register", "rejected", "status"):
                    # What this cluster should run may differ now: let the writer half re-check.
                    self.ctx.wakeups.fire(DELIVER)
        except grpc.RpcError:
            pass
        except Exception:
            log.exception("agent stream of cluster %s failed", state.cluster or "?")
        finally:
            state.closed.set()
            self.ctx.wakeups.fire(DELIVER)

    def _register(self, reg: agent_pb2.Register, state: StreamState) -> None:
        state.cluster = reg.cluster
        self.recorder.register(reg)
        with state.lock:
            state.runs = {j.job_uid: j.generation for j in reg.jobs}
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

    def _status(self, status: agent_pb2.JobStatus, state: StreamState) -> None:
        # What the agent runs is noted before the report is recorded: a sync in between must not
        # find the binding finished by this report while the run still shows here as running.
        with state.lock:
            if reported(status.phase) in FINISHED:
                state.runs.pop(status.job_uid, None)
            else:
                state.runs[status.job_uid] = status.generation
        self.recorder.status(state.cluster, status)

    def _sync(self, state: StreamState) -> None:
        """Queue a Dispatch for each binding this cluster should run and a Cancel for each run it
        must stop."""
        with session_scope(self.ctx.sessions) as session:
            wanted = bindings_repo.to_deliver(state.cluster, session=session)
            with state.lock:
                runs = dict(state.runs)
            refs = bindings_repo.refs(list(runs), session=session)
        for d in wanted:
            if (d.job_uid, d.generation) in state.sent_dispatch:
                continue
            state.sent_dispatch.add((d.job_uid, d.generation))
            state.outbox.put(
                agent_pb2.HubMessage(
                    dispatch=agent_pb2.Dispatch(
                        job_uid=d.job_uid,
                        generation=d.generation,
                        manifest=bindings_repo.manifest_json(d.manifest),
                        queue=d.queue,
                        priority=d.priority,
                    )
                )
            )
        wanted_runs = {(d.job_uid, d.generation) for d in wanted}
        fenced = [
            self._fence(state, uid, gen, refs.get(uid))
            for uid, gen in runs.items()
            if (uid, gen) not in wanted_runs and (uid, gen) not in state.sent_cancel
        ]
        if events := [e for e in fenced if e is not None]:
            with session_scope(self.ctx.sessions) as session:
                events_repo.add_events(events, session=session)

    def _fence(self, state: StreamState, uid: str, gen: int, ref: BindingRef | None) -> NewEvent | None:
        """Tell the agent to stop its run ``gen`` of ``uid`` if it must (see ``stop_reason``);
        returns the event that records it."""
        reason = stop_reason(ref, state.cluster, gen)
        if reason is None:
            if ref is not None and ref.phase in FINISHED:
                # The run ended by itself and the binding records it: this stream's record of
                # what the agent runs only trails the database by a report.
                with state.lock:
                    if state.runs.get(uid) == gen:
                        del state.runs[uid]
            return None  # else current: its dispatch row changed phase between the two reads
        state.sent_cancel.add((uid, gen))
        log.info("fencing job %s generation %d on %s: %s", uid, gen, state.cluster, reason)
        state.outbox.put(
            agent_pb2.HubMessage(cancel=agent_pb2.Cancel(job_uid=uid, generation=gen, reason=reason))
        )
        return NewEvent(
            "Fenced",
            f"told cluster {state.cluster} to stop generation {gen}: {reason}",
            job_uid=uid if ref is not None else None,
            cluster=state.cluster,
            kind="Warning",
        )
