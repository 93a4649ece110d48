"""The hub's dispatcher without Postgres: which jobs wait and which are admitted, one admit() at a time.

It keeps what the hub keeps in its ResourceBindings (a job's wait since when, the clusters it is
excluded from until when, its cluster, generation and admission time, its placements), builds the
Snapshot the hub's dispatcher builds, and applies admit()'s result as the hub writes it: an admitted
job takes a new generation and holds its queue usage until it finishes; a reclaimed one goes back to
waiting, keeping its creation time so it keeps its place, and its wait starts again. Where the pods
run is the agents' business: ``report`` records what they say, ``finish`` releases a job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from vglobal.admission import (
    AdmissionPolicy,
    AdmissionResult,
    Admit,
    ClusterSnap,
    Gang,
    PendingJob,
    QueueSnap,
    RunningJob,
    Snapshot,
    admit,
)
from vglobal.admission.share.usage import UsageLedger
from vglobal.admission.victims.reclaim_window import RecentReclaims
from vglobal.model.cards import CardUse
from vglobal.model.gpu_fit import asks_cards
from vglobal.model.resources import EMPTY, ResourceVector


@dataclass(slots=True)  # slots: a misspelt rule is an error, not a new attribute
class Rules:
    """The hub's dispatch flags (``vglobal hub --placement …``), with the hub's defaults: its
    admission policy and what the dispatcher applies around admission."""

    policy: AdmissionPolicy = field(default_factory=AdmissionPolicy)
    exclude_for: float = 300.0  # a cluster that rejected a job is skipped for it this long
    reclaim_interval: float = 600.0


@dataclass(frozen=True, slots=True)
class Admission:
    uid: str
    cluster: str
    generation: int


@dataclass(frozen=True, slots=True)
class Cycle:
    result: AdmissionResult
    admitted: tuple[Admission, ...]
    reclaimed: tuple[RunningJob, ...]  # as they ran, before they went back to waiting


@dataclass
class Dispatcher:
    queues: Sequence[QueueSnap]  # as applied; their usage is filled in per snapshot
    rules: Rules = field(default_factory=Rules)
    jobs: dict[str, PendingJob] = field(default_factory=dict)  # every unfinished job, as it last waited
    pending: dict[str, PendingJob] = field(default_factory=dict)
    running: dict[str, RunningJob] = field(default_factory=dict)  # admitted, not finished
    generation: dict[str, int] = field(default_factory=dict)
    # Admitted jobs whose agent has not started them yet, per cluster: their gangs' capacity is not
    # in the nodes' free figures, so admission sets it aside (as the hub does for Dispatched/Bound).
    unplaced: dict[str, dict[str, Gang]] = field(default_factory=dict)
    excluded: dict[str, dict[str, float]] = field(default_factory=dict)  # uid -> cluster -> until
    pinned: set[str] = field(default_factory=set)  # jobs no pod of which may be a victim
    _usage: dict[str, ResourceVector] = field(default_factory=dict)
    # Decayed usage per queue, charged up to each snapshot's time with what each queue held after
    # the cycle before (time jumps from event to event, so that is what it held in between).
    ledger: UsageLedger = field(init=False)
    _held: dict[str, ResourceVector] = field(default_factory=dict)
    reclaim_log: RecentReclaims = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = UsageLedger(self.rules.policy.fair_share_half_life)
        self.reclaim_log = RecentReclaims(self.rules.reclaim_interval)

    def submit(self, *jobs: PendingJob, pinned: bool = False) -> None:
        """``pinned``: no pod of these jobs may be a preemption or reclaim victim."""
        for job in jobs:
            if job.uid in self.jobs:
                raise ValueError(f"job {job.uid} was submitted already")
            self.jobs[job.uid] = self.pending[job.uid] = job
            if pinned:
                self.pinned.add(job.uid)

    def allocated(self, queue: str) -> ResourceVector:
        return self._usage.get(queue, EMPTY)

    def snapshot(self, now: float, clusters: Iterable[ClusterSnap]) -> Snapshot:
        policy = self.rules.policy
        ledger = self.ledger
        if policy.fair_share_half_life > 0:
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
            pending=tuple(self._waiting(now)),
            running=tuple(self.running.values()),
            policy=policy,
        )

    def _unplaced_cards(self, cluster: str) -> tuple[tuple[Gang, tuple[Mapping[str, str], ...]], ...]:
        """The cluster's unplaced gangs that take GPU cards, with their GPU annotations."""
        return tuple(
            (gang, self.jobs[uid].gpu_hints)
            for uid, gang in self.unplaced.get(cluster, {}).items()
            if uid in self.jobs and any(asks_cards(vec) for vec, _ in gang)
        )

    def _waiting(self, now: float) -> Iterable[PendingJob]:
        for uid, job in self.pending.items():
            until = self.excluded.get(uid)
            if until:
                job = replace(job, excluded_clusters=frozenset(c for c, t in until.items() if t > now))
            yield job

    def cycle(self, now: float, clusters: Iterable[ClusterSnap]) -> Cycle:
        """One dispatch cycle: snapshot, admit(), and the decisions applied."""
        result = admit(self.snapshot(now, clusters))
        admitted = [self._admit(uid, d.cluster, now) for uid, d in _admits(result)]
        reclaimed = [self.running[r.victim_uid] for r in result.reclaims if r.victim_uid in self.running]
        for victim in reclaimed:
            self.reclaim_log.add(victim.queue, victim.request, now)
            self.requeue(victim.uid, now)
        self._held = dict(self._usage)
        return Cycle(result, tuple(admitted), tuple(reclaimed))

    def _admit(self, uid: str, cluster: str, now: float) -> Admission:
        job = self.pending.pop(uid)
        generation = self.generation[uid] = self.generation.get(uid, 0) + 1
        self.running[uid] = RunningJob(
            uid=uid,
            queue=job.queue,
            cluster=cluster,
            priority=job.priority,
            created=job.created,
            request=job.request,
            running_since=now,
            group=None if job.group is None else job.group.key,
            pinned=uid in self.pinned,
            namespace=job.namespace,
            anti_affinity=job.anti_affinity,
        )
        self.unplaced.setdefault(cluster, {})[uid] = job.gang
        self._usage[job.queue] = self.allocated(job.queue) + job.request
        return Admission(uid, cluster, generation)

    def report(
        self,
        uid: str,
        placements: Mapping[str, ResourceVector],
        *,
        started: bool,
        cards: tuple[tuple[str, CardUse], ...] = (),
    ) -> None:
        """What the agent running ``uid`` says: per node, what its pods use there (and the GPU cards
        they hold); whether it started."""
        run = self.running.get(uid)
        if run is None:
            return
        if cards != run.cards:
            run = self.running[uid] = replace(run, cards=cards)
        if placements != run.placements:
            # As the hub charges a queue: what runs, and at least the gang's minResources.
            ran = EMPTY
            for vec in placements.values():
                ran = ran + vec
            charged = ran.maximum(self.jobs[uid].request)
            self._usage[run.queue] = self.allocated(run.queue) - run.request + charged
            self.running[uid] = replace(run, placements=placements, request=charged)
        if started:
            self.unplaced.get(run.cluster, {}).pop(uid, None)

    def finish(self, uid: str) -> RunningJob | None:
        """The job ended where it ran: its usage is released and it is forgotten."""
        run = self._release(uid)
        self.jobs.pop(uid, None)
        self.excluded.pop(uid, None)
        return run

    def requeue(self, uid: str, now: float, *, exclude: str | None = None) -> None:
        """Back to waiting (reclaimed, or rejected by ``exclude`` which it then skips a while)."""
        self._release(uid)
        if exclude is not None:
            self.excluded.setdefault(uid, {})[exclude] = now + self.rules.exclude_for
        self.jobs[uid] = self.pending[uid] = replace(self.jobs[uid], waiting_since=now)

    def withdraw(self, uid: str) -> None:
        """The admission did not take (the gang found no room after all): the job waits on as before."""
        self._release(uid)
        self.pending[uid] = self.jobs[uid]
        self._held = dict(self._usage)

    def _release(self, uid: str) -> RunningJob | None:
        run = self.running.pop(uid, None)
        if run is not None:
            self.unplaced.get(run.cluster, {}).pop(uid, None)
            self._usage[run.queue] = self.allocated(run.queue) - run.request
        return run

    def next_wakeup(self, now: float) -> float | None:
        """The first time after ``now`` at which admission may answer differently with nothing else
        changed: a wait reaching the starvation or reclaim threshold, an exclusion running out, a
        run old enough to be reclaimed."""
        if not self.pending:
            return None
        rules = self.rules.policy
        times = [j.waiting_since + rules.starvation_after for j in self.pending.values()]
        if rules.reclaim_after > 0:
            times += [j.waiting_since + rules.reclaim_after for j in self.pending.values()]
        if rules.reclaim_min_runtime > 0:
            times += [
                r.running_since + rules.reclaim_min_runtime
                for r in self.running.values()
                if r.running_since is not None
            ]
        times += [t for uid in self.pending for t in self.excluded.get(uid, {}).values()]
        if rules.reclaim_limit > 0:
            times += self.reclaim_log.expiries()
        later = [t for t in times if t > now]
        return min(later) if later else None


def _admits(result: AdmissionResult) -> Iterable[tuple[str, Admit]]:
    for uid in result.admitted_order:
        d = result.decisions[uid]
        if isinstance(d, Admit):
            yield uid, d
