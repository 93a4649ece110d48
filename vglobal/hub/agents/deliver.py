"""What one agent stream delivers: a Dispatch for each binding its cluster should run that the
stream has not sent yet, and a Cancel for each run the agent reports that it must stop.

A new stream is sent every admitted binding of its cluster (its agent may have lost some). After
that a sync reads only the bindings the agent has not acknowledged yet, which stay few however many
jobs run, and sends those it has not sent. Runs are checked against their bindings (fencing) on the
first sync, whenever a writer that can stop a run says so (``FENCE``: cancel, delete, re-queue),
after a report of a run that is not current, and at least every ``FENCE_INTERVAL`` seconds.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import agent_pb2
from vglobal.hub.dependencies import dispatch_objects, object_data, users
from vglobal.hub.secret_box import SecretBox
from vglobal.model.binding import FINISHED, BindingRef, stop_reason
from vglobal.model.records import QueueRow
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import objects as objects_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.events import NewEvent

log = logging.getLogger(__name__)

FENCE_INTERVAL = 1.0
# A sync's messages go to an agent that takes batches as HubMessage.batch of at most this many
# bytes and messages: well under the 4 MiB a gRPC client receives by default. Reading a stream
# message costs the agent and writing one the hub more than a Dispatch in it.
BATCH_BYTES = 1 << 20
BATCH_MESSAGES = 500
EVICT_REASON = "preempted by a higher-priority job"  # what an Evict tells the agent


def batched(messages: list[agent_pb2.HubMessage]) -> list[agent_pb2.HubMessage]:
    """The messages in order, those that fit together as one batch each (one alone as itself)."""
    out: list[agent_pb2.HubMessage] = []
    group: list[agent_pb2.HubMessage] = []
    size = 0

    def flush() -> None:
        if len(group) == 1:
            out.append(group[0])
        elif group:
            out.append(agent_pb2.HubMessage(batch=agent_pb2.HubBatch(messages=group)))
        group.clear()

    for msg in messages:
        n = msg.ByteSize()
        if group and (size + n > BATCH_BYTES or len(group) >= BATCH_MESSAGES):
            flush()
            size = 0
        group.append(msg)
        size += n
    flush()
    return out


class Plan(NamedTuple):
    full: bool  # a full sync: every run checked against its binding
    wanted: dict[str, int]  # uid -> generation: the runs read (all admitted, or those not acknowledged)
    delivered: list[bindings_repo.Delivery]  # to send


class Shared:
    """What every stream's sync reads alike, read once per transaction however many syncs it
    holds: the queues, the queues' rooms, the objects changed since a revision."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._queues: dict[str, QueueRow] | None = None
        self._rooms: list[QueueRow] | None = None
        self._last: int | None = None
        self._changed: dict[int, list[objects_repo.ObjectRow]] = {}

    def queues(self) -> dict[str, QueueRow]:
        if self._queues is None:
            self._queues = {q.name: q for q in queues_repo.list_queues(session=self.session)}
        return self._queues

    def rooms(self) -> list[QueueRow]:
        if self._rooms is None:
            self._rooms = queues_repo.with_rooms(session=self.session)
        return self._rooms

    def last_revision(self) -> int:
        if self._last is None:
            self._last = objects_repo.last_revision(session=self.session)
        return self._last

    def changed_since(self, revision: int) -> list[objects_repo.ObjectRow]:
        if revision not in self._changed:
            self._changed[revision] = objects_repo.changed_since(revision, session=self.session)
        return self._changed[revision]


@dataclass
class Courier:
    """One stream's record of what it sent. Used by one sync at a time."""

    cluster: str
    sent: dict[str, int] = field(default_factory=dict)  # uid -> generation dispatched on this stream
    sent_cancel: set[tuple[str, int]] = field(default_factory=set)
    sent_evict: set[tuple[str, int, str]] = field(default_factory=set)  # (uid, generation, pod uid)
    sent_spec: dict[str, int] = field(default_factory=dict)  # uid -> spec generation dispatched
    sent_rooms: dict[str, Any] = field(default_factory=dict)  # queue -> its room here last sent
    fenced_at: float = float("-inf")  # monotonic seconds of the last full sync
    box: SecretBox = field(default_factory=lambda: SecretBox([]))
    # The last dependency revision this stream looked at (-1: not yet): a later one is an object
    # changed at the hub, to update where this cluster's runs use it.
    object_revision: int = -1

    def due(self) -> bool:
        return time.monotonic() - self.fenced_at >= FENCE_INTERVAL

    def sync(
        self, runs: dict[str, int], *, fence: bool, session: Session
    ) -> tuple[list[agent_pb2.HubMessage], list[tuple[str, int]]]:
        """The messages to send once the caller commits (the Cancels among them recorded as
        events), and the runs found ended by themselves (to drop from ``runs``). ``runs`` is what
        the agent says it runs (uid -> generation); ``fence`` asks for a full sync."""
        plan = self.plan(fence=fence, session=session)
        return self.finish(plan, runs, session=session, shared=Shared(session))

    def plan(self, *, fence: bool, session: Session) -> Plan:
        """A sync's first half: what this cluster should run and which of it this stream has not
        sent. Syncs of several streams in one transaction plan all before any finishes, so what
        they read of every cluster (queues' rooms, changed objects) is read after their runs."""
        full = fence or self.due()
        wanted = bindings_repo.runs_of(self.cluster, session=session, unacknowledged=not full)
        new = [uid for uid, gen in wanted.items() if self.sent.get(uid) != gen]
        if full:  # runs applied anew (vglobal apply, scale): their Dispatch again, changed in place
            for uid, (gen, spec) in bindings_repo.respecified(self.cluster, session=session).items():
                if self.sent.get(uid) == gen and self.sent_spec.get(uid, 0) < spec:
                    new.append(uid)
        return Plan(full, wanted, bindings_repo.deliveries(self.cluster, new, session=session))

    def finish(
        self, plan: Plan, runs: dict[str, int], *, session: Session, shared: Shared
    ) -> tuple[list[agent_pb2.HubMessage], list[tuple[str, int]]]:
        """A sync's second half (see ``sync``), after ``plan`` in the same transaction."""
        full, wanted, delivered = plan
        updates = self._object_updates(shared) if full or self.object_revision < 0 else []
        chains: dict[str, list[agent_pb2.DispatchQueue]] = {}
        if delivered:
            rows = shared.queues()
            for d in delivered:
                if d.queue not in chains:
                    chains[d.queue] = convert.dispatch_queues(d.queue, rows, self.cluster)
        out = [self._dispatch(d, chains[d.queue], session) for d in delivered]
        out += self._queue_limits(shared)
        out += updates
        out += self._evictions(session)
        if not full:
            return out, []
        self.fenced_at = time.monotonic()
        # Forget what this cluster no longer runs: the record stays as big as what it runs.
        self.sent = {uid: gen for uid, gen in self.sent.items() if wanted.get(uid) == gen}
        self.sent_spec = {uid: g for uid, g in self.sent_spec.items() if uid in self.sent}
        self.sent_cancel = {k for k in self.sent_cancel if runs.get(k[0]) == k[1]}
        self.sent_evict = {k for k in self.sent_evict if runs.get(k[0]) == k[1]}
        strays = {u: g for u, g in runs.items() if wanted.get(u) != g and (u, g) not in self.sent_cancel}
        refs = bindings_repo.refs(list(strays), session=session)
        events: list[NewEvent] = []
        ended: list[tuple[str, int]] = []
        for uid, gen in strays.items():
            ref = refs.get(uid)
            reason = stop_reason(ref, self.cluster, gen)
            if reason is not None:
                out.append(self._cancel(uid, gen, reason))
                events.append(self._fenced(uid, gen, reason, ref))
            elif ref is not None and ref.phase in FINISHED:
                # The run ended by itself and the binding records it: the stream's record of what
                # the agent runs only trails the database by a report.
                ended.append((uid, gen))
        events_repo.add_events(events, session=session)
        return out, ended

    def _queue_limits(self, shared: Shared) -> list[agent_pb2.HubMessage]:
        """The queues whose room beyond gangs on this cluster moved since this stream last said
        (after the Dispatches: a new run's gang is in what the queue holds here)."""
        moved = []
        rows = shared.rooms()
        for row in rows:
            status = row.status
            room = (status["allowance"].get(self.cluster), (status.get("here") or {}).get(self.cluster))
            if self.sent_rooms.get(row.name) != room:
                self.sent_rooms[row.name] = room
                moved.append(row)
        gone = self.sent_rooms.keys() - {r.name for r in rows}
        if gone:  # no longer capped, or deleted: its figures as they are now, without an allowance
            moved += [q for q in shared.queues().values() if q.name in gone]
            for name in gone:
                del self.sent_rooms[name]
        if not moved:
            return []
        by_name = {q.name: q for q in moved}
        queues = [convert.dispatch_queues(q.name, by_name, self.cluster)[0] for q in moved]
        return [agent_pb2.HubMessage(queue_limits=agent_pb2.QueueLimits(queues=queues))]

    def _object_updates(self, shared: Shared) -> list[agent_pb2.HubMessage]:
        """An ObjectUpdate with each object changed at the hub since the last look that a run of
        this cluster uses (a new stream only notes where it starts: its Dispatches carry them)."""
        session = shared.session
        if self.object_revision < 0:
            self.object_revision = shared.last_revision()
            return []
        changed = shared.changed_since(self.object_revision)
        if not changed:
            return []
        self.object_revision = max(r.revision for r in changed)
        used = [
            r
            for r in changed
            if users(r.kind, r.namespace, r.name, session=session, clusters=[self.cluster])
        ]
        if not used:
            return []
        log.info("updating %d objects on %s", len(used), self.cluster)
        data = []
        for r in used:
            try:
                data.append(object_data(r, self.box))
            except ValueError as exc:
                log.error("not updating %s/%s/%s: %s", r.kind, r.namespace, r.name, exc)
        return [agent_pb2.HubMessage(object_update=agent_pb2.ObjectUpdate(objects=data))]

    def _dispatch(
        self, d: bindings_repo.Delivery, queues: list[agent_pb2.DispatchQueue], session: Session
    ) -> agent_pb2.HubMessage:
        self.sent[d.job_uid] = d.generation
        self.sent_spec[d.job_uid] = d.spec_generation
        return agent_pb2.HubMessage(
            dispatch=agent_pb2.Dispatch(
                job_uid=d.job_uid,
                generation=d.generation,
                manifest=d.manifest,
                queue=d.queue,
                priority=d.priority,
                preemption_policy=d.preemption_policy,
                task_priorities=d.task_priorities or {},
                queues=queues,
                nominated_nodes=d.nominated or (),
                spec_generation=d.spec_generation,
                objects=dispatch_objects(d.namespace, d.manifest, self.box, session=session),
            )
        )

    def _evictions(self, session: Session) -> list[agent_pb2.HubMessage]:
        """An Evict for every run with pods to evict that this stream has not told yet (after the
        run's Dispatch, so an agent that lost the run hears of it first)."""
        out = []
        for uid, (gen, pods) in sorted(bindings_repo.evictions_of(self.cluster, session=session).items()):
            todo = [p for p in pods if (uid, gen, p) not in self.sent_evict]
            if not todo:
                continue
            self.sent_evict.update((uid, gen, p) for p in todo)
            log.info("evicting %d pods of job %s generation %d on %s", len(todo), uid, gen, self.cluster)
            out.append(
                agent_pb2.HubMessage(
                    evict=agent_pb2.Evict(
                        job_uid=uid,
                        generation=gen,
                        pod_uids=todo,
                        reason=EVICT_REASON,
                    )
                )
            )
        return out

    def _cancel(self, uid: str, gen: int, reason: str) -> agent_pb2.HubMessage:
        self.sent_cancel.add((uid, gen))
        log.info("fencing job %s generation %d on %s: %s", uid, gen, self.cluster, reason)
        return agent_pb2.HubMessage(cancel=agent_pb2.Cancel(job_uid=uid, generation=gen, reason=reason))

    def _fenced(self, uid: str, gen: int, reason: str, ref: BindingRef | None) -> NewEvent:
        return NewEvent(
            "Fenced",
            f"told cluster {self.cluster} to stop generation {gen}: {reason}",
            job_uid=uid if ref is not None else None,
            cluster=self.cluster,
            kind="Warning",
        )
