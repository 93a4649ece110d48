"""Recording a batch of what one agent reported, in one transaction: heartbeats, acknowledgements
and job status, in the order sent, with one statement per kind of write.

Every report is checked against its binding as locked for the batch and as the batch's earlier
reports left it, so the rules of one-at-a-time recording hold: a report of a run that is not
current changes nothing; a move is made only from a phase it may start from. A status carries the
whole of its job's state, so of several statuses of one run only the last is written, with the
events of them all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import grpc
from sqlalchemy.orm import Session

from vglobal import convert
from vglobal.api.v1 import agent_pb2
from vglobal.hub.agents import child_failures
from vglobal.hub.errors import HubError
from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, notify
from vglobal.model.binding import FINISHED, BindingPhase, BindingRef, allowed, reported
from vglobal.model.forms import TERMINATED, after_stop
from vglobal.model.reasons import WaitKind
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import cluster_beats
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import runs as runs_repo
from vglobal.store.repo.events import NewEvent
from vglobal.store.repo.runs import JobReport, Move

log = logging.getLogger(__name__)

# Reports recorded in one transaction at most: a long burst is written in several.
MAX_BATCH = 2000


class Superseded(HubError):
    """Another stream now speaks for the cluster: this one is closed."""

    code = grpc.StatusCode.ABORTED


@dataclass
class Outcome:
    """What a batch changed that the stream must act on."""

    stale: int = 0  # reports of runs that are not current: the stream should check its runs
    finished: int = 0
    rejected: int = 0
    ended: list[tuple[str, str]] = field(default_factory=list)  # (queue, phase) of each run that finished


@dataclass
class _Batch:
    cluster: str
    refs: dict[str, BindingRef]
    exclude_for: float
    moves: dict[str, Move] = field(default_factory=dict)
    statuses: dict[str, JobReport] = field(default_factory=dict)
    # The final reports of cancelled runs (see stopped()), written only where they change the pods.
    stops: dict[str, tuple[int, JobReport]] = field(default_factory=dict)
    rejects: list[agent_pb2.BindingRejected] = field(default_factory=list)
    events: list[NewEvent] = field(default_factory=list)
    outcome: Outcome = field(default_factory=Outcome)
    # uid -> (generation, epoch seconds): the latest checkpoint its current run reported
    checkpoints: dict[str, tuple[int, float]] = field(default_factory=dict)

    def current(self, uid: str, generation: int) -> BindingRef | None:
        ref = self.refs.get(uid)
        if ref is None or not ref.is_current(self.cluster, generation):
            self.outcome.stale += 1
            return None
        return ref

    def to(self, uid: str, ref: BindingRef, target: BindingPhase, reason: str | None) -> None:
        """Move the binding, merged with an earlier move of this batch (from the phase read)."""
        first = self.moves.get(uid)
        source = first.source if first is not None else ref.phase
        if first is not None and reason is None:
            reason = first.reason
        finished = target in FINISHED
        self.moves[uid] = Move(uid, ref.generation, source, target, reason, finished)
        self.refs[uid] = BindingRef(target, ref.cluster, ref.generation)

    def accepted(self, msg: agent_pb2.BindingAccepted) -> None:
        ref = self.current(msg.job_uid, msg.generation)
        if ref is None or not allowed(ref.phase, BindingPhase.Bound):
            return
        self.to(msg.job_uid, ref, BindingPhase.Bound, None)
        said = f"accepted by cluster {self.cluster}"
        self.events.append(NewEvent("Bound", said, job_uid=msg.job_uid, cluster=self.cluster))

    def rejected(self, msg: agent_pb2.BindingRejected) -> None:
        ref = self.current(msg.job_uid, msg.generation)
        if ref is None:
            return
        # Re-queued on its own below: a move this batch made of it is dropped (a re-queue may
        # start from any admitted phase), and later reports of the run find it not current.
        self.moves.pop(msg.job_uid, None)
        self.refs[msg.job_uid] = BindingRef(BindingPhase.Suspended, None, ref.generation)
        self.rejects.append(msg)

    def stopped(self, st: agent_pb2.JobStatus) -> bool:
        """A cancelled run's agent confirms it stopped: a finished report of the very run (cluster,
        generation) its Aborted binding names. Its pods and counts are kept for the user to see;
        the binding stays as the cancel left it. Any other run of the job is fenced as before."""
        ref = self.refs.get(st.job_uid)
        if ref is None or ref.phase is not BindingPhase.Aborted:
            return False
        if not ref.names_run(self.cluster, st.generation):
            return False
        if reported(st.phase) not in FINISHED:
            return False  # still stopping: reported as a run that is not current (a fence check)
        report = JobReport(
            st.job_uid,
            BindingPhase.Aborted.value,
            [convert.task_counts(t) for t in st.tasks],
            [convert.pod_placement(p) for p in st.placements],
            st.retry_count,
            False,  # finished when cancelled
        )
        self.stops[st.job_uid] = (st.generation, report)
        self.events += self._agent_events(st)
        return True

    def _agent_events(self, st: agent_pb2.JobStatus) -> list[NewEvent]:
        return [
            NewEvent(
                e.reason,
                e.message,
                job_uid=st.job_uid,
                cluster=self.cluster,
                kind=e.kind or "Normal",
                source=f"agent/{self.cluster}",
                time=datetime.fromtimestamp(e.time, UTC) if e.time else None,
            )
            for e in st.events
        ]

    def _write_stops(self, session: Session) -> None:
        """The confirmed stops whose pods the job row does not show stopped yet (a report sent again
        after a reconnect changes nothing), each pod gone from the cluster marked Terminated."""
        known = runs_repo.placements_of(list(self.stops), session=session)
        reports: list[JobReport] = []
        for uid, (gen, rep) in self.stops.items():
            before = known.get(uid)
            if before is None:
                continue  # the job was deleted meanwhile
            pods = after_stop(before, rep.placements)
            if pods == list(before):
                continue
            reports.append(replace(rep, placements=pods))
            gone = sum(1 for p in pods if p.phase == TERMINATED)
            said = f"cluster {self.cluster} confirmed generation {gen} stopped: {gone} pods terminated"
            self.events.append(NewEvent("Stopped", said, job_uid=uid, cluster=self.cluster))
        runs_repo.update_statuses(reports, session=session)

    def status(self, st: agent_pb2.JobStatus) -> None:
        if self.stopped(st):
            return
        ref = self.current(st.job_uid, st.generation)
        if ref is None:
            log.debug("ignoring status of stale run %s gen %d", st.job_uid, st.generation)
            return
        target = reported(st.phase)
        finished = target in FINISHED
        # The newest generation said by any of the run's statuses in the batch (an old agent says none).
        earlier = self.statuses.get(st.job_uid)
        observed = st.observed_generation or (earlier.observed if earlier is not None else 0)
        if st.checkpointed_at > self.checkpoints.get(st.job_uid, (0, 0.0))[1]:
            self.checkpoints[st.job_uid] = (st.generation, st.checkpointed_at)
        self.statuses[st.job_uid] = JobReport(
            st.job_uid,
            st.phase,
            [convert.task_counts(t) for t in st.tasks],
            [convert.pod_placement(p) for p in st.placements],
            st.retry_count,
            finished,
            observed,
        )
        if target is not None and target is not ref.phase and allowed(ref.phase, target):
            self.to(st.job_uid, ref, target, (st.message or f"job {st.phase}") if finished else "")
            self.outcome.finished += finished
        self.events += self._agent_events(st)

    def _write_checkpoints(self, session: Session) -> None:
        """The runs' newer checkpoints, each one event (not one per pod or per report that only
        repeats it): what a reclaim of the run now loses starts there."""
        for uid, at in runs_repo.checkpointed(self.checkpoints, self.cluster, session=session):
            when = at.astimezone(UTC).isoformat(timespec="seconds")
            said = f"checkpoint at {when} reported by cluster {self.cluster}"
            self.events.append(NewEvent("Checkpointed", said, job_uid=uid, cluster=self.cluster))

    def _restart_children(self, session: Session) -> bool:
        """HyperJobs' children that failed are re-queued as their failurePolicy says (their Failed
        move, and any of their siblings' re-queued with them, is dropped: the re-queue makes the
        binding Suspended)."""
        failed = [m.uid for m in self.moves.values() if m.target is BindingPhase.Failed]
        restarts = child_failures.restart_failed(failed, self.cluster, self.exclude_for, session=session)
        for uid in (u for r in restarts for u in r.requeued):
            self.moves.pop(uid, None)
        self.events += child_failures.events(restarts, self.cluster)
        return bool(restarts)

    def write_own(self, session: Session) -> bool:
        """What this batch writes on its own (newer checkpoints, cancelled runs' stops, HyperJob
        children re-queued), before the moves; whether children were re-queued."""
        self._write_checkpoints(session)
        self._write_stops(session)
        return self._restart_children(session)

    def write_rejects(self, session: Session) -> None:
        for msg in self.rejects:
            bindings_repo.requeue(
                [msg.job_uid],
                session=session,
                kind=WaitKind.Rejected,
                reason=f"cluster {self.cluster} rejected the binding: {msg.reason}",
                exclude_until=time.time() + self.exclude_for,
            )
            self.events.append(
                NewEvent("Rejected", msg.reason, job_uid=msg.job_uid, cluster=self.cluster, kind="Warning")
            )
        self.outcome.rejected = len(self.rejects)


def write(batches: Sequence[_Batch], session: Session) -> None:
    """The batches of several streams, each kind of write one statement for all."""
    # Each status carries the generation its run observed (see status()).
    statuses = [r for b in batches for r in b.statuses.values()]
    # A run that failed may re-queue HyperJob children and their siblings (write_own), which
    # resets their job rows: their statuses must be written before, as they always were.
    failing = any(m.target is BindingPhase.Failed for b in batches for m in b.moves.values())
    if failing:
        runs_repo.update_statuses(statuses, session=session)
    restarts = [b.write_own(session) for b in batches]
    moves = [(b.cluster, m) for b in batches for m in b.moves.values()]
    ended = runs_repo.move_runs([m for _, m in moves], [c for c, _ in moves], session=session)
    if not failing:
        # After the moves: a change of placements touches its binding (migrations 0016, 0026)
        # only where no move of this transaction did, so a moved binding gets one row version.
        runs_repo.update_statuses(statuses, session=session)
    for b in batches:  # each batch its own cluster's (another stream of it would be superseded)
        b.outcome.ended = [(q, phase) for c, q, phase in ended if c == b.cluster]
        b.write_rejects(session)
    events_repo.add_events([e for b in batches for e in b.events], session=session)
    rejects = any(b.rejects for b in batches)
    if any(b.outcome.finished for b in batches) or rejects or any(restarts):
        notify(DISPATCH, session=session)
    if rejects or any(restarts):
        notify(DELIVER, session=session)
        notify(FENCE, session=session)


def card_record(c: agent_pb2.GpuCardFree) -> list[Any]:
    """A reported card as the cluster row keeps it."""
    return convert.card_of(c).to_json()


def job_uid(msg: agent_pb2.AgentMessage) -> str | None:
    body = msg.WhichOneof("body")
    if body in ("accepted", "rejected", "status"):
        return str(getattr(msg, body).job_uid)
    return None


def _heartbeat(
    cluster: str, messages: Sequence[agent_pb2.AgentMessage]
) -> tuple[dict[str, dict[str, int]], dict[str, list[list[Any]]]] | None:
    """The batch's heartbeats merged (changed nodes' free capacity, card tables); None if none."""
    heartbeat: dict[str, dict[str, int]] | None = None
    cards: dict[str, list[list[Any]]] = {}
    for msg in messages:
        if msg.WhichOneof("body") == "heartbeat":
            hb = msg.heartbeat
            if hb.api_unreachable:
                # The agent is alive but its cluster is not: recorded as no heartbeat at all, so
                # the cluster turns NotReady after cluster_timeout and fails over.
                log.warning("cluster %s: its agent cannot reach the API server: %s", cluster, hb.api_error)
                continue
            heartbeat = heartbeat or {}
            heartbeat.update({n.name: convert.units_of(n.free) for n in hb.nodes})
            cards.update({n.name: [card_record(c) for c in n.cards] for n in hb.cards})
    return None if heartbeat is None else (heartbeat, cards)


def record(
    cluster: str,
    messages: Sequence[agent_pb2.AgentMessage],
    *,
    stream: str,
    exclude_for: float,
    session: Session,
) -> Outcome:
    """Record heartbeats, acknowledgements and job status of ``cluster``'s agent, sent on
    ``stream`` (its Register was recorded before); the caller owns the transaction. Superseded
    (nothing recorded) when another stream now speaks for the cluster."""
    got = record_many([(cluster, stream, messages)], exclude_for=exclude_for, session=session)[0]
    if isinstance(got, Superseded):
        raise got
    return got


def record_many(
    reports: Sequence[tuple[str, str, Sequence[agent_pb2.AgentMessage]]],
    *,
    exclude_for: float,
    session: Session,
) -> list[Outcome | Superseded]:
    """``record`` for the reports of several streams (cluster, stream, messages) in one
    transaction: whose streams still speak for their clusters read, and their heartbeats written,
    in one statement each for all. Each report gets its Outcome, or Superseded (nothing of it
    recorded)."""
    speaking = cluster_beats.speakers([(c, s) for c, s, _ in reports], session=session)
    beats = [
        (c, *hb)
        for c, s, msgs in reports
        if (c, s) in speaking and (hb := _heartbeat(c, msgs)) is not None
    ]
    cluster_beats.heartbeats(beats, session=session)
    if any(b[1] for b in beats):
        notify(DISPATCH, session=session)
    live = [(c, msgs) for c, s, msgs in reports if (c, s) in speaking]
    batches = _batches(live, exclude_for=exclude_for, session=session)
    write(batches, session)
    done = iter(batches)
    return [
        next(done).outcome
        if (c, s) in speaking
        else Superseded(f'another agent stream now speaks for cluster "{c}"')
        for c, s, _ in reports
    ]


def _batches(
    reports: Sequence[tuple[str, Sequence[agent_pb2.AgentMessage]]], *, exclude_for: float, session: Session
) -> list[_Batch]:
    """Each stream's acknowledgements and job status applied to the bindings they name, every
    binding of them all locked at once (in uid order, so two groups never wait on each other in
    a cycle)."""
    named: list[list[str]] = []
    for _, messages in reports:
        uids = [u for m in messages if (u := job_uid(m)) is not None]
        failed = [
            m.status.job_uid
            for m in messages
            if m.WhichOneof("body") == "status" and reported(m.status.phase) is BindingPhase.Failed
        ]
        if failed:
            uids += child_failures.to_lock(failed, session=session)
        named.append(uids)
    refs = runs_repo.lock_refs([u for uids in named for u in uids], session=session)
    out = []
    for (cluster, messages), uids in zip(reports, named, strict=True):
        batch = _Batch(cluster, {u: refs[u] for u in uids if u in refs}, exclude_for)
        for msg in messages:
            body = msg.WhichOneof("body")
            if body == "accepted":
                batch.accepted(msg.accepted)
            elif body == "rejected":
                batch.rejected(msg.rejected)
            elif body == "status":
                batch.status(msg.status)
        out.append(batch)
    return out
