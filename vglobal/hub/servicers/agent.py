"""AgentService.Connect: one bidirectional stream per member cluster, a coroutine on the gRPC loop.

An open stream holds no thread: it waits on the loop, and its database work runs in a small pool of
its own, so agents cannot take the threads that serve the API. The stream must begin with Register
within ``register_timeout`` and for the cluster its caller may speak for (its certificate's or agent
token's); the cluster then has this stream as its one live stream (see StatusRecorder.register).

The reader half records what the agent says (inventory, heartbeats, acks, job status), each message
checked first; the writer half delivers what the database says this cluster should run, and fences
off runs whose generation moved on. Nothing here decides placement: the dispatcher did that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from vglobal.api.v1 import agent_pb2, agent_pb2_grpc
from vglobal.hub.agent_reports import check_message, check_register
from vglobal.hub.auth.authenticator import PermissionDenied
from vglobal.hub.auth.policy import Action, decide
from vglobal.hub.context import HubContext
from vglobal.hub.errors import AlreadyExists, FailedPrecondition, TooLarge
from vglobal.hub.guard import current_principal
from vglobal.hub.notify import DELIVER
from vglobal.hub.status import StatusRecorder
from vglobal.model.binding import FINISHED, BindingRef, reported, stop_reason
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo.events import NewEvent

log = logging.getLogger(__name__)

SYNC_INTERVAL = 1.0
RELEASE_WAIT = 2.0  # how long a reconnecting agent waits for its previous stream to end here
T = TypeVar("T")


@dataclass(eq=False)
class StreamState:
    cluster: str
    identity: str
    stream: str = field(default_factory=lambda: uuid.uuid4().hex)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    # What the agent says it runs: uid -> generation (unfinished runs only). The reader and the
    # writer touch it from the pool's threads.
    runs: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    sent_dispatch: set[tuple[str, int]] = field(default_factory=set)
    sent_cancel: set[tuple[str, int]] = field(default_factory=set)
    ending: bool = False  # the agent has gone; the cluster is released soon
    released: asyncio.Event = field(default_factory=asyncio.Event)


class AgentServicer(agent_pb2_grpc.AgentServiceServicer):
    def __init__(self, ctx: HubContext, loop: asyncio.AbstractEventLoop, pool: ThreadPoolExecutor) -> None:
        self.ctx = ctx
        self.recorder = StatusRecorder(ctx)
        self.loop = loop
        self.pool = pool
        self.open = 0
        self.streams: set[StreamState] = set()
        self.local: dict[str, StreamState] = {}  # cluster -> its latest stream on this hub
        ctx.wakeups.subscribe(DELIVER, self._wake_threadsafe)

    def _wake_threadsafe(self) -> None:
        self.loop.call_soon_threadsafe(self._wake_all)

    def _wake_all(self) -> None:
        for state in self.streams:
            state.wake.set()

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.loop.run_in_executor(self.pool, fn, *args)

    async def Connect(
        self,
        request_iterator: AsyncIterator[agent_pb2.AgentMessage],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[agent_pb2.HubMessage]:
        limit = self.ctx.settings.max_agent_streams
        if self.open >= limit:
            raise TooLarge(f"this hub serves {limit} agent streams at most (--max-agent-streams)")
        self.open += 1
        try:
            messages = aiter(request_iterator)
            reg = await self._first(messages)
            if reg is None:
                return
            state = StreamState(reg.cluster, current_principal().audit_name)
            await self._claim(reg, state)
            try:
                async for msg in self._serve(messages, state):
                    yield msg
            finally:
                self._end(state)
        finally:
            self.open -= 1

    async def _claim(self, reg: agent_pb2.Register, state: StreamState) -> None:
        """Register ``state`` as the cluster's stream. An agent that reconnects at once may find its
        previous stream here still ending: that one is waited for, briefly, instead of refused."""
        try:
            await self._db(self._register, reg, state)
        except AlreadyExists:
            old = self.local.get(reg.cluster)
            if old is None or not old.ending:
                raise
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(old.released.wait(), RELEASE_WAIT)
            await self._db(self._register, reg, state)
        self.local[reg.cluster] = state

    def _end(self, state: StreamState) -> None:
        """Release the cluster without awaiting (this may run while the call is being cancelled)."""
        state.ending = True
        self.streams.discard(state)
        released = self.loop.run_in_executor(self.pool, self.recorder.release, state.cluster, state.stream)
        released.add_done_callback(lambda _: state.released.set())
        if self.local.get(state.cluster) is state:
            released.add_done_callback(lambda _: self._forget(state))
        self.ctx.wakeups.fire(DELIVER)
        log.info("agent stream of cluster %s closed", state.cluster)

    def _forget(self, state: StreamState) -> None:
        if self.local.get(state.cluster) is state:
            del self.local[state.cluster]

    async def _first(self, messages: AsyncIterator[agent_pb2.AgentMessage]) -> agent_pb2.Register | None:
        """The stream's Register, checked: sent in time, first, sound, and for a cluster the caller
        may speak for. None when the agent hung up first."""
        timeout = self.ctx.settings.register_timeout
        try:
            first = await asyncio.wait_for(anext(messages), timeout)
        except TimeoutError:
            raise FailedPrecondition(
                f"no Register within {timeout:g}s: a stream must begin with Register"
            ) from None
        except StopAsyncIteration:
            return None
        body = first.WhichOneof("body")
        if body != "register":
            raise FailedPrecondition(f"the first message must be Register, not {body or 'an empty message'}")
        check_register(first.register)
        denial = decide(current_principal(), Action.connect_agent, cluster=first.register.cluster)
        if denial is not None:
            raise PermissionDenied(denial)
        return first.register

    async def _serve(
        self, messages: AsyncIterator[agent_pb2.AgentMessage], state: StreamState
    ) -> AsyncIterator[agent_pb2.HubMessage]:
        yield agent_pb2.HubMessage(
            registered=agent_pb2.Registered(heartbeat_interval_seconds=self.ctx.settings.heartbeat_interval)
        )
        self.streams.add(state)
        reader = asyncio.ensure_future(self._read(messages, state))
        try:
            while True:
                state.wake.clear()  # before the sync: a wake-up during it is not lost
                for msg in await self._db(self._sync, state):
                    yield msg
                if reader.done():
                    reader.result()  # a refused message or a take-over ends the stream with its status
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(state.wake.wait(), SYNC_INTERVAL)
        finally:
            reader.cancel()

    async def _read(self, messages: AsyncIterator[agent_pb2.AgentMessage], state: StreamState) -> None:
        try:
            async for msg in messages:
                body = check_message(msg)
                if body == "register":
                    raise FailedPrecondition("register: this stream has registered already")
                await self._db(self._record, body, msg, state)
                if body in ("rejected", "status"):
                    # What this cluster should run may differ now: let the writer half re-check.
                    self.ctx.wakeups.fire(DELIVER)
        finally:
            state.ending = True
            state.wake.set()

    def _register(self, reg: agent_pb2.Register, state: StreamState) -> None:
        self.recorder.register(reg, stream=state.stream, identity=state.identity)
        with state.lock:
            state.runs = {j.job_uid: j.generation for j in reg.jobs}
        log.info(
            "cluster %s registered (%s) with %d nodes, running %d jobs",
            reg.cluster, state.identity, len(reg.nodes), len(reg.jobs),
        )  # fmt: skip
        self.ctx.wakeups.fire(DELIVER)

    def _record(self, body: str, msg: agent_pb2.AgentMessage, state: StreamState) -> None:
        if body == "heartbeat":
            self.recorder.heartbeat(state.cluster, msg.heartbeat, stream=state.stream)
        elif body == "accepted":
            self.recorder.accepted(state.cluster, msg.accepted, stream=state.stream)
        elif body == "rejected":
            with state.lock:  # first: see _status
                state.runs.pop(msg.rejected.job_uid, None)
            self.recorder.rejected(state.cluster, msg.rejected, stream=state.stream)
        elif body == "status":
            self._status(msg.status, state)

    def _status(self, status: agent_pb2.JobStatus, state: StreamState) -> None:
        # What the agent runs is noted before the report is recorded: a sync in between must not
        # find the binding finished by this report while the run still shows here as running.
        with state.lock:
            if reported(status.phase) in FINISHED:
                state.runs.pop(status.job_uid, None)
            else:
                state.runs[status.job_uid] = status.generation
        self.recorder.status(state.cluster, status, stream=state.stream)

    def _sync(self, state: StreamState) -> list[agent_pb2.HubMessage]:
        """A Dispatch for each binding this cluster should run and a Cancel for each run it must stop."""
        with session_scope(self.ctx.sessions) as session:
            wanted = bindings_repo.to_deliver(state.cluster, session=session)
            with state.lock:
                runs = dict(state.runs)
            refs = bindings_repo.refs(list(runs), session=session)
        out: list[agent_pb2.HubMessage] = []
        for d in wanted:
            if (d.job_uid, d.generation) in state.sent_dispatch:
                continue
            state.sent_dispatch.add((d.job_uid, d.generation))
            dispatch = agent_pb2.Dispatch(
                job_uid=d.job_uid,
                generation=d.generation,
                manifest=bindings_repo.manifest_json(d.manifest),
                queue=d.queue,
                priority=d.priority,
            )
            out.append(agent_pb2.HubMessage(dispatch=dispatch))
        wanted_runs = {(d.job_uid, d.generation) for d in wanted}
        fenced = [
            self._fence(state, uid, gen, refs.get(uid), out)
            for uid, gen in runs.items()
            if (uid, gen) not in wanted_runs and (uid, gen) not in state.sent_cancel
        ]
        if events := [e for e in fenced if e is not None]:
            with session_scope(self.ctx.sessions) as session:
                events_repo.add_events(events, session=session)
        return out

    def _fence(
        self, state: StreamState, uid: str, gen: int, ref: BindingRef | None, out: list[agent_pb2.HubMessage]
    ) -> NewEvent | None:
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
        out.append(agent_pb2.HubMessage(cancel=agent_pb2.Cancel(job_uid=uid, generation=gen, reason=reason)))
        return NewEvent(
            "Fenced",
            f"told cluster {state.cluster} to stop generation {gen}: {reason}",
            job_uid=uid if ref is not None else None,
            cluster=state.cluster,
            kind="Warning",
        )
