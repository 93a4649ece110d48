"""The hub's dispatcher without Postgres: which jobs wait and which are admitted, one admit() at a time.

It keeps what the hub keeps: each job's static facts (``vglobal.admission.inputs.JobFacts``, made as
the hub makes them at submit) and its ResourceBinding (phase, cluster, generation, wait since when,
clusters excluded until when, reported pods, pods to evict), moved only as ``model/binding.py``
allows. Each cycle's Snapshot is built from them by ``vglobal.admission.inputs``, as the hub's
dispatch cache builds it, and admit()'s result is applied as the hub writes it: an admitted job
takes a new generation and holds its queue usage until it finishes; a whole-job victim goes back to
waiting, keeping its creation time so it keeps its place, and its wait starts again; a pod-level
victim's binding records the pods its agent is to evict, and the job runs on without them. Where the
pods run is the agents' business: ``report`` records what they say, ``finish`` ends a job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vglobal.admission import (
    AdmissionPolicy,
    AdmissionResult,
    Admit,
    ClusterSnap,
    Eviction,
    Gang,
    PendingJob,
    QueueSnap,
    RunningJob,
    Snapshot,
    admit,
)
from vglobal.admission.inputs import JobFacts, Shared, admitted_job, claim_row, claims_of, pending_job
from vglobal.admission.share.usage import UsageLedger
from vglobal.admission.victims.reclaim_window import RecentReclaims
from vglobal.hub.dispatch.explain import changed_statuses
from vglobal.hub.dispatch.held import held_by_cluster, queue_rooms
from vglobal.model.admission_policy import HUB_POLICY
from vglobal.model.binding import ADMITTED, FINISHED, UNPLACED, BindingPhase, BindingRef, allowed
from vglobal.model.gpu_fit import asks_cards
from vglobal.model.resources import EMPTY, ResourceVector

_P = BindingPhase


class SimulationError(RuntimeError):
    """The simulation cannot go on (it does not settle, or a binding was to make a move the hub's
    bindings never make)."""


@dataclass(slots=True)  # slots: a misspelt rule is an error, not a new attribute
class Rules:
    """The hub's dispatch flags (``vglobal hub --placement …``), with the hub's defaults: its
    admission policy and what the dispatcher applies around admission."""

    policy: AdmissionPolicy = HUB_POLICY
    exclude_for: float = 300.0  # a cluster that rejected a job is skipped for it this long
    reclaim_interval: float = 600.0


@dataclass
class Binding:
    """A job's ResourceBinding as the hub's row holds it."""

    waiting_since: float
    phase: BindingPhase = _P.Suspended
    cluster: str | None = None
    generation: int = 0
    excluded: dict[str, float] = field(default_factory=dict)  # cluster -> excluded until
    placements: list[dict[str, Any]] | None = None  # the reported pods (PodPlacement JSON)
    evictions: list[str] = field(default_factory=list)  # pod uids its agent is to evict
    dispatched_at: float | None = None
    checkpointed: float | None = None  # the latest checkpoint its run reported

    @property
    def ref(self) -> BindingRef:
        return BindingRef(self.phase, self.cluster, self.generation)

    def move(self, target: BindingPhase) -> None:
        if not allowed(self.phase, target):
            raise SimulationError(f"a binding does not move from {self.phase} to {target}")
        self.phase = target


@dataclass(frozen=True, slots=True)
class Admission:
    uid: str
    cluster: str
    generation: int


@dataclass(frozen=True, slots=True)
class Cycle:
    result: AdmissionResult
    admitted: tuple[Admission, ...]
    reclaimed: tuple[RunningJob, ...]  # whole-job victims as they ran, before they went back to waiting
    evictions: tuple[Eviction, ...]  # pods taken from runs that go on, as their bindings took them
    # Each queue's figures as the hub stores them with the queue after a cycle (deserved, realCap,
    # what it holds per cluster): what a Dispatch then carries to the agents.
    statuses: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass
class Dispatcher:
    queues: Sequence[QueueSnap]  # as applied; their usage is filled in per snapshot
    rules: Rules = field(default_factory=Rules)
    jobs: dict[str, JobFacts] = field(default_factory=dict)  # every unfinished job
    bindings: dict[str, Binding] = field(default_factory=dict)  # every job's, finished ones too
    pending: dict[str, JobFacts] = field(default_factory=dict)  # Suspended, in submit order
    running: dict[str, RunningJob] = field(default_factory=dict)  # admitted, not finished
    # Admitted jobs whose agent has not started them yet, per cluster: their gangs' capacity is not
    # in the nodes' free figures, so admission sets it aside (as the hub does for Dispatched/Bound).
    unplaced: dict[str, dict[str, Gang]] = field(default_factory=dict)
    shared: Shared = field(default_factory=Shared)
    _charged: dict[str, ResourceVector] = field(default_factory=dict)  # uid -> its queue's charge
    _usage: dict[str, ResourceVector] = field(default_factory=dict)
    _waiting: dict[str, PendingJob] = field(default_factory=dict)  # admission's view, while it holds
    # Decayed usage per queue, charged up to each snapshot's time with what each queue held after
    # the cycle before (time jumps from event to event, so that is what it held in between).
    ledger: UsageLedger = field(init=False)
    _held: dict[str, ResourceVector] = field(default_factory=dict)
    reclaim_log: RecentReclaims = field(init=False)
    # The claims on freed room the last cycle returned, stored as the hub stores them.
    claim_rows: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        own = {q.name: q.half_life for q in self.queues if q.half_life is not None}
        self.ledger = UsageLedger(self.rules.policy.fair_share_half_life, half_lives=own)
        self.reclaim_log = RecentReclaims(self.rules.reclaim_interval)

    def submit(self, *jobs: JobFacts, waiting_since: float | None = None) -> None:
        """Stored and waiting (since their creation unless ``waiting_since``)."""
        for job in jobs:
            if job.uid in self.bindings:
                raise ValueError(f"job {job.uid} was submitted already")
            self.jobs[job.uid] = self.pending[job.uid] = job
            since = job.created if waiting_since is None else waiting_since
            self.bindings[job.uid] = Binding(since)

    def allocated(self, queue: str) -> ResourceVector:
        return self._usage.get(queue, EMPTY)

    def snapshot(self, now: float, clusters: Iterable[ClusterSnap]) -> Snapshot:
        policy = self.rules.policy
        ledger = self.ledger
        if policy.fair_share_half_life > 0 or ledger.half_lives:
            ledger.advance(now, self._held)
        recent = self.reclaim_log.by_queue(now) if policy.reclaim_limit > 0 else {}
        return Snapshot(
            now=now,
            queues=tuple(
                replace(
                    q,
                    allocated=self.allocated(q.name),
                    usage=ledger.of(q.name),
                    reclaimed=recent.get(q.name, EMPTY),
                )
                for q in self.queues
            ),
            clusters=tuple(
                replace(
                    c,
                    unplaced=tuple(self.unplaced.get(c.name, {}).values()),
                    unplaced_cards=self._unplaced_cards(c.name),
                )
                for c in clusters
            ),
            pending=tuple(self._pending(now)),
            running=tuple(self.running.values()),
            policy=policy,
            claims=claims_of(self.claim_rows),
        )

    def _unplaced_cards(self, cluster: str) -> tuple[tuple[Gang, tuple[Mapping[str, str], ...]], ...]:
        """The cluster's unplaced gangs that take GPU cards, with their GPU annotations."""
        return tuple(
            (gang, self.jobs[uid].gpu_hints)
            for uid, gang in self.unplaced.get(cluster, {}).items()
            if uid in self.jobs and any(asks_cards(vec) for vec, _ in gang)
        )

    def _pending(self, now: float) -> Iterable[PendingJob]:
        """As the hub's cache: built once per wait, again each cycle only while exclusions run."""
        for uid, f in self.pending.items():
            job = self._waiting.get(uid)
            b = self.bindings[uid]
            if job is None or b.excluded:
                job = self._waiting[uid] = pending_job(
                    f, waiting_since=b.waiting_since, excluded=b.excluded, now=now
                )
            yield job

    def cycle(self, now: float, clusters: Iterable[ClusterSnap]) -> Cycle:
        """One dispatch cycle: snapshot, admit(), and the decisions applied as the hub writes them
        (admissions, then whole-job victims re-queued, then pods to evict)."""
        snap = self.snapshot(now, clusters)
        result = admit(snap)
        self.claim_rows = [claim_row(c) for c in result.claims]
        admitted = [self._admit(uid, d.cluster, now) for uid, d in _admits(result)]
        reclaimed = []
        for r in result.reclaims:
            victim = self.running.get(r.victim_uid)
            if victim is not None:
                self.reclaim_log.add(victim.queue, victim.request, now)
                self.requeue(victim.uid, now)
                reclaimed.append(victim)
        taken = tuple(e for e in result.evictions if self._evict(e.job_uid, e.pods))
        self._held = dict(self._usage)
        held = held_by_cluster(snap, result)
        rooms = queue_rooms(snap, result, held, self._known)
        statuses = changed_statuses(result, {}, held, rooms=rooms)
        return Cycle(result, tuple(admitted), tuple(reclaimed), taken, statuses)

    def _known(self, uid: str) -> tuple[JobFacts, list[dict[str, Any]] | None] | None:
        f, b = self.jobs.get(uid), self.bindings.get(uid)
        return None if f is None or b is None else (f, b.placements)

    def _admit(self, uid: str, cluster: str, now: float) -> Admission:
        job = self.pending.pop(uid)
        self._waiting.pop(uid, None)
        b = self.bindings[uid]
        b.move(_P.Dispatched)
        b.cluster, b.generation, b.dispatched_at = cluster, b.generation + 1, now
        b.placements, b.evictions, b.checkpointed = None, [], None
        self._take(uid)
        self.unplaced.setdefault(cluster, {})[uid] = job.gang
        return Admission(uid, cluster, b.generation)

    def _evict(self, uid: str, pods: Sequence[str]) -> bool:
        """The pods its agent is to evict, if the job is still admitted (as the hub's binding takes
        them): admission no longer counts them as the job's."""
        b = self.bindings.get(uid)
        if b is None or b.phase not in ADMITTED:
            return False
        b.evictions = [*b.evictions, *pods]
        self._take(uid)
        return True

    def _take(self, uid: str) -> None:
        """The admitted job as admission reads it, from its facts and binding; its queue charged."""
        f, b = self.jobs[uid], self.bindings[uid]
        got = admitted_job(
            f,
            self.shared,
            cluster=b.cluster,
            placements=b.placements,
            evictions=b.evictions,
            dispatched_at=b.dispatched_at,
            checkpointed=b.checkpointed,
        )
        self._charge(uid, f.queue, got.charged)
        if got.running is not None:
            self.running[uid] = got.running

    def _charge(self, uid: str, queue: str, charged: ResourceVector | None) -> None:
        was = self._charged.pop(uid, None)
        usage = self.allocated(queue)
        if was is not None:
            usage = usage - was
        if charged is not None:
            usage = usage + charged
            self._charged[uid] = charged
        self._usage[queue] = usage

    def accepted(self, uid: str) -> None:
        """Its agent accepted the run."""
        b = self.bindings[uid]
        if b.phase is _P.Dispatched:
            b.move(_P.Bound)

    def report(
        self, uid: str, placements: Sequence[Mapping[str, Any]], *, started: bool, checkpointed: float = 0.0
    ) -> None:
        """What the agent running ``uid`` says: its pods (PodPlacement JSON, as the hub stores
        them), whether the job started (its binding then moves to Running) and when it last saved
        its work (0: never; the hub keeps the latest)."""
        b = self.bindings.get(uid)
        if b is None or b.phase not in ADMITTED:
            return
        b.placements = [dict(p) for p in placements]
        if checkpointed > (b.checkpointed or 0.0):
            b.checkpointed = checkpointed
        if started and b.phase in UNPLACED:
            b.move(_P.Running)
            if b.cluster is not None:
                self.unplaced.get(b.cluster, {}).pop(uid, None)
        self._take(uid)

    def finish(self, uid: str, phase: BindingPhase = _P.Succeeded) -> RunningJob | None:
        """The job ended where it ran (``phase``: Succeeded, Failed or Aborted): its usage is released
        and only its binding is kept."""
        if phase not in FINISHED:
            raise ValueError(f"{phase} is not a finished phase")
        b = self.bindings.get(uid)
        if b is None or b.phase in FINISHED:
            return None
        b.move(phase)
        run = self._release(uid)
        self.jobs.pop(uid, None)
        self.pending.pop(uid, None)
        self._waiting.pop(uid, None)
        return run

    def requeue(self, uid: str, now: float, *, exclude: str | None = None) -> None:
        """Back to waiting (reclaimed, or rejected by ``exclude`` which it then skips a while)."""
        b = self.bindings[uid]
        b.move(_P.Suspended)
        if exclude is not None:
            b.excluded[exclude] = now + self.rules.exclude_for
        b.cluster, b.waiting_since = None, now
        self._release(uid)
        self.pending[uid] = self.jobs[uid]
        self._waiting.pop(uid, None)

    def withdraw(self, uid: str) -> None:
        """The admission did not take (the gang found no room after all): the job waits on as before."""
        b = self.bindings[uid]
        b.move(_P.Suspended)
        b.cluster = None
        self._release(uid)
        self.pending[uid] = self.jobs[uid]
        self._held = dict(self._usage)

    def _release(self, uid: str) -> RunningJob | None:
        run = self.running.pop(uid, None)
        if run is not None:
            self.unplaced.get(run.cluster, {}).pop(uid, None)
        f = self.jobs.get(uid)
        if f is not None:
            self._charge(uid, f.queue, None)
        return run

    def next_wakeup(self, now: float) -> float | None:
        """The first time after ``now`` at which admission may answer differently with nothing else
        changed: a wait reaching the starvation or reclaim threshold, an exclusion running out, a
        run old enough to be reclaimed."""
        if not self.pending:
            return None
        rules = self.rules.policy
        waits = [self.bindings[uid].waiting_since for uid in self.pending]
        times = [t + rules.starvation_after for t in waits]
        if rules.reclaim_after > 0:
            times += [t + rules.reclaim_after for t in waits]
        if rules.reclaim_min_runtime > 0:
            times += [
                r.running_since + rules.reclaim_min_runtime
                for r in self.running.values()
                if r.running_since is not None
            ]
        times += [t for uid in self.pending for t in self.bindings[uid].excluded.values()]
        if rules.reclaim_limit > 0:
            times += self.reclaim_log.expiries()
        later = [t for t in times if t > now]
        return min(later) if later else None


def _admits(result: AdmissionResult) -> Iterable[tuple[str, Admit]]:
    for uid in result.admitted_order:
        d = result.decisions[uid]
        if isinstance(d, Admit):
            yield uid, d
