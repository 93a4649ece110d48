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
                    self.recorder.rejected(state.cluster, msg.rejected)
                    with state.lock:
                        state.runs.pop(msg.rejected.job_uid, None)
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
        finished = self.recorder.status(state.cluster, status)
        with state.lock:
            if finished:
                state.runs.pop(status.job_uid, None)
            else:
                state.runs[status.job_uid] = status.generation

    def _sync(self, state: StreamState) -> None:
        """Queue a Dispatch for each binding this cluster should run and a Cancel for each stale run."""
        with session_scope(self.ctx.sessions) as session:
            wanted = bindings_repo.to_deliver(state.cluster, session=session)
            with state.lock:
                runs = dict(state.runs)
            current = bindings_repo.generations(list(runs), session=session)
        wanted_keys = {(uid, gen) for uid, gen, *_ in wanted}
        fenced: list[NewEvent] = []
        for uid, gen, manifest, queue_name, priority, _phase in wanted:
            if (uid, gen) in state.sent_dispatch:
                continue
            state.sent_dispatch.add((uid, gen))
            state.outbox.put(
                agent_pb2.HubMessage(
                    dispatch=agent_pb2.Dispatch(
                        job_uid=uid,
                        generation=gen,
                        manifest=bindings_repo.manifest_json(manifest),
                        queue=queue_name,
                        priority=priority,
                    )
                )
            )
        for uid, gen in runs.items():
            if (uid, gen) in wanted_keys or (uid, gen) in state.sent_cancel:
                continue
            cur = current.get(uid)
            if (
                cur is not None
                and cur[1] == state.cluster
                and cur[2] == gen
                and cur[0] in bindings_repo.HOLDING
            ):
                continue  # current, but the dispatch row changed phase between the two reads
            reason = (
                "job deleted"
                if cur is None
                else (
                    "job cancelled"
                    if cur[0] == "Aborted"
                    else f"generation {gen} is stale (now {cur[2]} on {cur[1] or 'no cluster'})"
                )
            )
            state.sent_cancel.add((uid, gen))
            fenced.append(
                NewEvent(
                    "Fenced",
                    f"told cluster {state.cluster} to stop generation {gen}: {reason}",
                    job_uid=uid if cur is not None else None,
                    cluster=state.cluster,
                    kind="Warning",
                )
            )
            log.info("fencing job %s generation %d on %s: %s", uid, gen, state.cluster, reason)
            state.outbox.put(
                agent_pb2.HubMessage(cancel=agent_pb2.Cancel(job_uid=uid, generation=gen, reason=reason))
            )
        if fenced:
            with session_scope(self.ctx.sessions) as session:
                events_repo.add_events(fenced, session=session)
