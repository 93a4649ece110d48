"""AgentService.Connect: one bidirectional stream per member cluster, a coroutine on the gRPC loop.

An open stream holds no thread: it waits on the loop, and its database work runs in a small pool of
its own, so agents cannot take the threads that serve the API. The stream must begin with Register
within ``register_timeout`` and for the cluster its caller may speak for (its certificate's or agent
token's); the cluster then has this stream as its one live stream (see agents/register.py).

The reader half takes what the agent says (heartbeats, acks, job status), each message checked
first, and a recorder writes it, whatever arrived meanwhile in one transaction (agents/record.py);
the writer half delivers what the database says this cluster should run, and fences off runs whose
generation moved on (agents/deliver.py). Nothing here decides placement: the dispatcher did that.
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
from vglobal.hub.agents import record, register
from vglobal.hub.agents.check import check_message, check_register
from vglobal.hub.agents.deliver import FENCE_INTERVAL, Courier, Shared, batched
from vglobal.hub.agents.log_relay import LogRelay
from vglobal.hub.agents.sync_group import SyncGroups
from vglobal.hub.auth.access import current_principal
from vglobal.hub.auth.authenticator import PermissionDenied
from vglobal.hub.auth.policy import Action, decide
from vglobal.hub.context import HubContext
from vglobal.hub.errors import AlreadyExists, FailedPrecondition, HubError, TooLarge
from vglobal.hub.metrics import count_finished
from vglobal.hub.notify import DELIVER, FENCE, deliver_to, delivered_to
from vglobal.model.binding import FINISHED, reported
from vglobal.store.engine import session_scope

log = logging.getLogger(__name__)

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
    # What the reader received, for the recorder (None: the agent hung up).
    inbox: asyncio.Queue[agent_pb2.AgentMessage | None] = field(default_factory=asyncio.Queue)
    courier: Courier | None = None
    fence: bool = True  # the next sync checks every run (see agents/deliver.py)
    ending: bool = False  # the agent has gone; the cluster is released soon
    takes_batches: bool = False  # the agent reads HubMessage.batch
    released: asyncio.Event = field(default_factory=asyncio.Event)
    # Log requests and cancels for the agent (agents/log_relay.py): sent between syncs.
    mail: list[agent_pb2.HubMessage] = field(default_factory=list)
    mailed: asyncio.Event = field(default_factory=asyncio.Event)


Report = tuple[list[agent_pb2.AgentMessage], StreamState]  # what a stream received meanwhile


class AgentServicer(agent_pb2_grpc.AgentServiceServicer):
    def __init__(
        self,
        ctx: HubContext,
        loop: asyncio.AbstractEventLoop,
        pool: ThreadPoolExecutor,
        relay: LogRelay | None = None,
    ) -> None:
        self.ctx = ctx
        self.relay = relay or LogRelay()
        self.relay.send = self._mail
        self.loop = loop
        self.pool = pool
        self.open = 0
        self.streams: set[StreamState] = set()
        self.local: dict[str, StreamState] = {}  # cluster -> its latest stream on this hub
        # The streams' syncs, many in one transaction (agents/sync_group.py).
        self.syncs: SyncGroups[tuple[StreamState, bool], list[agent_pb2.HubMessage]] = SyncGroups(
            self._sync_many, lambda req: self._sync(*req), self._db
        )
        # Their reports too: one transaction records what several streams received meanwhile.
        self.records: SyncGroups[Report, HubError | None] = SyncGroups(
            self._record_many, lambda req: self._record_many([req])[0], self._db
        )
        ctx.wakeups.subscribe(DELIVER, self._wake_threadsafe)

    def _wake_threadsafe(self, payload: str) -> None:
        self.loop.call_soon_threadsafe(self._wake, delivered_to(payload))

    def _wake(self, clusters: frozenset[str] | None) -> None:
        """Wake the streams of these clusters (None: all). A cycle that only admitted names the
        clusters it admitted to: the others' streams would each read, in a transaction of their
        own, that they have nothing new."""
        for state in self.streams:
            if clusters is None or state.cluster in clusters:
                state.wake.set()

    def _mail(self, cluster: str, msg: agent_pb2.HubMessage) -> bool:
        """Queue ``msg`` for the cluster's live stream here (the gRPC loop's thread only)."""
        state = self.local.get(cluster)
        if state is None or state.ending:
            return False
        state.mail.append(msg)
        state.mailed.set()
        return True

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
            state = StreamState(reg.cluster, current_principal().audit_name, takes_batches=reg.takes_batches)
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
        if self.local.get(state.cluster) is state:
            self.relay.stream_ended(state.cluster)
        released = self.loop.run_in_executor(self.pool, self._release, state)
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
            registered=agent_pb2.Registered(
                heartbeat_interval_seconds=self.ctx.settings.heartbeat_interval, takes_batches=True
            )
        )
        self.streams.add(state)
        reader = asyncio.ensure_future(self._read(messages, state))
        recorder = asyncio.ensure_future(self._record_all(state))
        wakeups = self.ctx.wakeups
        fences = wakeups.seq(FENCE)
        try:
            while True:
                state.wake.clear()  # before the sync: a wake-up during it is not lost
                fence, state.fence = state.fence or wakeups.seq(FENCE) != fences, False
                fences = wakeups.seq(FENCE)
                out = await self.syncs((state, fence))
                for msg in batched(out) if state.takes_batches else out:
                    yield msg
                if reader.done() and reader.exception() is not None:
                    reader.result()  # a refused message ends the stream with its status
                if recorder.done():
                    recorder.result()  # a take-over ends the stream with its status
                    return
                async for msg in self._between_syncs(state):
                    yield msg
        finally:
            reader.cancel()
            recorder.cancel()

    @staticmethod
    async def _between_syncs(state: StreamState) -> AsyncIterator[agent_pb2.HubMessage]:
        """The mail (log requests) as it comes, until a wake-up or FENCE_INTERVAL calls for a sync."""
        deadline = asyncio.get_running_loop().time() + FENCE_INTERVAL
        while not state.wake.is_set():
            if state.mail:
                mail, state.mail = state.mail, []
                for msg in mail:
                    yield msg
            state.mailed.clear()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0 or state.mail:
                if left <= 0:
                    return
                continue
            waits = [asyncio.ensure_future(state.wake.wait()), asyncio.ensure_future(state.mailed.wait())]
            _, pending = await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for w in pending:
                w.cancel()

    async def _read(self, messages: AsyncIterator[agent_pb2.AgentMessage], state: StreamState) -> None:
        try:
            async for msg in messages:
                kind = check_message(msg)
                if kind == "register":
                    raise FailedPrecondition("register: this stream has registered already")
                if kind == "batch":  # one stream message for many: each recorded as if sent alone
                    for inner in msg.batch.messages:
                        if inner.HasField("log_chunk"):
                            self.relay.deliver(inner.log_chunk)
                        else:
                            state.inbox.put_nowait(inner)
                elif kind == "log_chunk":  # for a caller of StreamLogs, not the database
                    self.relay.deliver(msg.log_chunk)
                else:
                    state.inbox.put_nowait(msg)
        finally:
            state.inbox.put_nowait(None)
            state.wake.set()

    async def _record_all(self, state: StreamState) -> None:
        """Record what the reader received, in batches of whatever arrived meanwhile, until the
        agent hung up and all it sent is recorded."""
        try:
            while (batch := await self._next_batch(state)) is not None:
                refused = await self.records((batch, state))
                if refused is not None:
                    raise refused
        finally:
            state.ending = True
            state.wake.set()

    @staticmethod
    async def _next_batch(state: StreamState) -> list[agent_pb2.AgentMessage] | None:
        """The reports received so far (at most ``record.MAX_BATCH``); None once the agent hung up."""
        first = await state.inbox.get()
        if first is None:
            return None
        batch = [first]
        while len(batch) < record.MAX_BATCH and not state.inbox.empty():
            msg = state.inbox.get_nowait()
            if msg is None:
                state.inbox.put_nowait(None)  # for the next call, after this batch is recorded
                break
            batch.append(msg)
        return batch

    def _register(self, reg: agent_pb2.Register, state: StreamState) -> None:
        with session_scope(self.ctx.sessions) as session:
            register.register(
                reg, stream=state.stream, identity=state.identity, settings=self.ctx.settings, session=session
            )
        with state.lock:
            state.runs = {j.job_uid: j.generation for j in reg.jobs}
        log.info(
            "cluster %s registered (%s) with %d nodes, running %d jobs",
            reg.cluster, state.identity, len(reg.nodes), len(reg.jobs),
        )  # fmt: skip
        self.ctx.wakeups.fire(DELIVER)

    def _release(self, state: StreamState) -> None:
        with session_scope(self.ctx.sessions) as session:
            register.release(state.cluster, state.stream, session=session)

    def _record_many(self, group: list[Report]) -> list[HubError | None]:
        """The reports of several streams recorded in one transaction (agents/record.py); per
        stream, Superseded if another stream now speaks for its cluster, else None."""
        # What the agent runs is noted before its reports are recorded: a sync in between must
        # not find a binding finished by a report while the run still shows here as running.
        for batch, state in group:
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
            outcomes = record.record_many(
                [(state.cluster, state.stream, batch) for batch, state in group],
                exclude_for=self.ctx.settings.exclude_for,
                session=session,
            )
        refused: list[HubError | None] = []
        for (_, state), outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, record.Superseded):
                refused.append(outcome)
                continue
            refused.append(None)
            count_finished(outcome.ended)  # committed now
            if outcome.stale:
                state.fence = True  # a run that is not current reported: it may have to be stopped
                self.ctx.wakeups.fire(DELIVER, deliver_to([state.cluster]))
        return refused

    def _sync(self, state: StreamState, fence: bool) -> list[agent_pb2.HubMessage]:
        """A Dispatch for each binding this cluster should run that this stream has not sent, and
        a Cancel for each run it must stop (see agents/deliver.py)."""
        return self._sync_many([(state, fence)])[0]

    def _sync_many(self, group: list[tuple[StreamState, bool]]) -> list[list[agent_pb2.HubMessage]]:
        """The syncs of several streams in one transaction: every plan first, then each finished
        (so what they read alike is read after every stream's runs; see Courier.plan)."""
        couriers: list[Courier] = []
        runs: list[dict[str, int]] = []
        for state, _ in group:
            if state.courier is None:
                state.courier = Courier(state.cluster, box=self.ctx.secrets)
            couriers.append(state.courier)
            with state.lock:
                runs.append(dict(state.runs))
        try:
            with session_scope(self.ctx.sessions) as session:
                fences = [fence for _, fence in group]
                plans = [c.plan(fence=f, session=session) for c, f in zip(couriers, fences, strict=True)]
                shared = Shared(session)
                done = [
                    c.finish(plan, r, session=session, shared=shared)
                    for c, plan, r in zip(couriers, plans, runs, strict=True)
                ]
        except BaseException:
            for state, _ in group:  # what their couriers noted as sent was not: each starts afresh
                state.courier = None
            raise
        out = []
        for (state, _), (msgs, ended) in zip(group, done, strict=True):
            if ended:
                with state.lock:
                    for uid, gen in ended:
                        if state.runs.get(uid) == gen:
                            del state.runs[uid]
            out.append(msgs)
        return out
