"""What the dispatcher keeps of unfinished jobs between cycles: one entry per job, and the indexes
admission reads, derived from the entries.

Each cycle reads only the bindings written since the last read (``refresh``); the rows this hub
wrote itself it takes in as it wrote them (``wrote``, ``knows``), and the next read skips them. A
cycle that fails names the jobs its transactions could have touched (``invalidate``): the next read
fetches those again, and what the cache holds of every other job stays.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import NamedTuple

from sqlalchemy.orm import Session

from vglobal.admission import Gang, PendingByQueue, PendingJob, RunningJob
from vglobal.admission.inputs import admitted_job, pending_job
from vglobal.hub.dispatch.facts import JobFacts, Shared, Templates, read_facts
from vglobal.hub.dispatch.heap import paused_gc
from vglobal.model.binding import UNFINISHED, UNPLACED, BindingPhase
from vglobal.model.gpu_fit import asks_cards
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import ResourceVector
from vglobal.store.repo import live as live_repo
from vglobal.store.repo.live import Horizon, LiveBinding, Written

# The kept bindings are replaced by a full read this often (seconds). The change reads miss
# nothing, so this only bounds what a fault in them could cost; a full read takes about 1 s at
# 100k jobs.
FULL_READ_INTERVAL = 300.0
_SUSPENDED = BindingPhase.Suspended.value
_UNFINISHED = frozenset(p.value for p in UNFINISHED)
_UNPLACED = frozenset(p.value for p in UNPLACED)


def respecified(entries: Mapping[str, Entry], rows: Sequence[LiveBinding]) -> set[str]:
    """Waiting jobs whose facts to read again, as an apply may have changed them: those whose wait
    began again (an apply over a waiting job restarts it), and those back to wait from a run (an
    apply over a running job changes its gang for the next admission)."""
    out = set()
    for b in rows:
        e = entries.get(b.job_uid)
        if e is not None and b.phase == _SUSPENDED and e.binding.waiting_since != b.waiting_since:
            out.add(b.job_uid)
    return out


class WrittenReason(NamedTuple):
    """The wait reason this hub last wrote for a job, and when (monotonic seconds). A NamedTuple:
    a cycle notes thousands."""

    kind: WaitKind
    text: str
    at: float


@dataclass(slots=True)
class Entry:
    """One unfinished job: its binding as last read and what admission sees of it. ``facts`` is
    None only for a job deleted between the read of its binding and of its facts."""

    binding: LiveBinding
    facts: JobFacts | None
    pending: PendingJob | None = None  # while Suspended
    running: RunningJob | None = None  # while admitted to a cluster
    reason: WrittenReason | None = None  # while Suspended
    # While admitted: what its queue is charged (what runs, at least the gang's minResources) and
    # what of that its placed pods hold.
    charged: ResourceVector | None = None
    ran: ResourceVector | None = None


@dataclass
class JobCache:
    entries: dict[str, Entry] = field(default_factory=dict)
    horizon: Horizon | None = None  # of the last read; None: nothing read yet
    # Transactions of this hub's own binding writes since that read, whose rows it applied as it
    # wrote them (see wrote()): the next read skips rows still at those versions.
    own_writes: set[int] = field(default_factory=set)
    full_read_at: float = 0.0  # monotonic seconds
    suspect: set[str] = field(default_factory=set)  # read again next time, whatever their version
    respecified: set[str] = field(default_factory=set)  # waiting jobs whose facts to read again
    shared: Shared = field(default_factory=Shared)
    templates: Templates = field(default_factory=dict)  # facts by stored form (read_facts)
    # Derived from the entries by _index / _unindex only:
    pending: dict[str, PendingJob] = field(default_factory=dict)  # in the order first read
    # The same per queue, and each queue's tuple as last handed out (dropped when the queue's jobs
    # change): admission's memo takes over what it derived from a tuple it saw before.
    queued: dict[str, dict[str, PendingJob]] = field(default_factory=dict)
    _queued_tuples: dict[str, tuple[PendingJob, ...]] = field(default_factory=dict)
    running: dict[str, RunningJob] = field(default_factory=dict)
    unplaced: dict[str, dict[str, Gang]] = field(default_factory=dict)  # cluster -> uid -> gang
    usage: dict[str, dict[str, int]] = field(default_factory=dict)  # per queue, of admitted jobs
    running_usage: dict[str, dict[str, int]] = field(default_factory=dict)  # of that, placed pods'
    expiring: set[str] = field(default_factory=set)  # pending jobs whose cluster exclusions run out
    _usage_vec: dict[str, ResourceVector] = field(default_factory=dict)

    # ---- reading

    def refresh(self, now: float, *, session: Session) -> None:
        """Bring the entries up to date: the rows written since the last read and the suspect
        ones, or all of them when nothing is kept, the kept ones are old, or a row was deleted."""
        horizon = live_repo.read_horizon(session=session)
        mono = time.monotonic()
        if self.horizon is not None and mono - self.full_read_at < FULL_READ_INTERVAL:
            rows, count = live_repo.changed_since(self.horizon, session=session, skip=sorted(self.own_writes))
            again = self.suspect - {b.job_uid for b in rows}
            rows += live_repo.of_jobs(sorted(again), session=session)
            entries = self.entries
            self.respecified = respecified(entries, rows)
            added = sum(1 for b in rows if b.phase in _UNFINISHED and b.job_uid not in entries)
            removed = sum(1 for b in rows if b.phase not in _UNFINISHED and b.job_uid in entries)
            if len(entries) + added - removed == count:  # else a deleted job is still kept
                fresh = self._facts([b.job_uid for b in rows if b.phase in _UNFINISHED], session=session)
                self._guarded(lambda: self._apply_known(rows, now, fresh))
                self._read_at(horizon)
                return
        with paused_gc():
            rows = live_repo.live(session=session)
            self.respecified = respecified(self.entries, rows)
            fresh = self._facts([b.job_uid for b in rows], session=session)
            self._guarded(lambda: self._replace(rows, now, fresh))
        self._read_at(horizon)
        self.full_read_at = mono

    def _read_at(self, horizon: Horizon) -> None:
        self.horizon = horizon
        self.own_writes = set()
        self.suspect = set()

    def _guarded(self, apply: Callable[[], None]) -> None:
        """Apply what was read; a failure half-way leaves nothing kept (the next read reads all)."""
        try:
            apply()
        except BaseException:
            self.clear()
            raise

    def clear(self) -> None:
        """Forget everything: the next read reads every binding and every job's facts."""
        fresh = JobCache()
        for f in fields(self):
            setattr(self, f.name, getattr(fresh, f.name))

    def _facts(self, uids: list[str], *, session: Session) -> dict[str, JobFacts]:
        """The facts of the jobs among these that no entry holds yet (the last I/O of a read:
        what follows cannot fail half-way but through a fault of ours)."""
        entries = self.entries
        again = self.respecified
        missing = [u for u in uids if (e := entries.get(u)) is None or e.facts is None or u in again]
        self.respecified = set()
        return {f.uid: f for f in read_facts(missing, self.shared, self.templates, session=session)}

    def _replace(self, rows: Sequence[LiveBinding], now: float, fresh: dict[str, JobFacts]) -> None:
        """After a full read: every entry rebuilt; the facts and reasons of known jobs are kept."""
        old = self.entries
        self.entries, self.pending, self.running, self.unplaced = {}, {}, {}, {}
        self.queued, self._queued_tuples = {}, {}
        self.usage, self.expiring, self._usage_vec = {}, set(), {}
        self.running_usage = {}
        for b in rows:
            was = old.get(b.job_uid)
            facts = fresh.get(b.job_uid) or (was.facts if was is not None else None)
            self._put(b, facts, now, kept_reason(was, b))
        self._expire(now)

    # ---- this hub's own writes

    def wrote(self, written: Written, now: float) -> None:
        """Bindings this hub wrote, as the write left them (so also what others changed in them
        before it), once its transaction committed, which wrote no other bindings. The next read
        skips their versions: in a busy cycle most of what it would otherwise read again."""
        if any(b.job_uid not in self.entries for b in written.rows):
            return  # a job this cache has not read yet: the next read finds the rows
        self._apply_known(written.rows, now, {})
        self.own_writes |= written.xids

    def knows(self, written: Written) -> None:
        """Bindings this hub wrote in a transaction that changed nothing admission reads of them
        (their wait reasons) and wrote no other bindings, once it committed, whether before or
        after the last read. If every row is as this cache holds it, the next read skips their
        versions. A row that is not was changed by another writer around the write (before it,
        after the last read, or after it, before the read): the next read fetches it again."""
        entries = self.entries
        if all((e := entries.get(b.job_uid)) is not None and e.binding == b for b in written.rows):
            self.own_writes |= written.xids

    def invalidate(self, uids: Iterable[str]) -> None:
        """Jobs a failed transaction could have written: the next read fetches them again."""
        self.suspect.update(uids)

    # ---- wait reasons written

    def reason(self, uid: str) -> WrittenReason | None:
        e = self.entries.get(uid)
        return None if e is None else e.reason

    def noted(self, reasons: Iterable[tuple[str, WaitKind, str]], at: float) -> None:
        """These reasons were handed to the writer: they count as written unless forgotten."""
        get = self.entries.get
        for uid, kind, text in reasons:
            e = get(uid)
            if e is not None and e.pending is not None:
                e.reason = WrittenReason(kind, text, at)

    def forget_reasons(self, uids: Iterable[str]) -> None:
        """These jobs' reasons may not be stored as noted (their write failed): write them again."""
        for uid in uids:
            e = self.entries.get(uid)
            if e is not None:
                e.reason = None

    # ---- what admission reads

    def allocated(self, queue: str) -> ResourceVector:
        got = self._usage_vec.get(queue)
        if got is None:
            got = self._usage_vec[queue] = ResourceVector(self.usage.get(queue, {}))
        return got

    # ---- the entries and their indexes

    def _apply_known(self, rows: Sequence[LiveBinding], now: float, fresh: dict[str, JobFacts]) -> None:
        entries = self.entries
        for b in rows:
            uid = b.job_uid
            was = entries.get(uid)
            if was is not None and was.binding == b:
                continue  # written, but not in anything admission reads (a wait reason, say)
            if was is not None:
                self._unindex(uid, was)
                del entries[uid]
            if b.phase in _UNFINISHED:
                facts = fresh.get(uid) or (was.facts if was is not None else None)
                self._put(b, facts, now, kept_reason(was, b))
        self._expire(now)
        if len(self.shared) + len(self.templates) > 2 * len(entries) + 1000:
            # Mostly shapes of jobs that are gone; sharing only saves work.
            self.shared, self.templates = Shared(), {}

    def _put(self, b: LiveBinding, facts: JobFacts | None, now: float, reason: WrittenReason | None) -> None:
        e = Entry(b, facts)
        if facts is not None:
            if b.phase == _SUSPENDED:
                e.pending = pending(facts, b, now)
                e.reason = reason
            else:
                e.charged, e.ran, e.running = admitted_job(
                    facts,
                    self.shared,
                    cluster=b.cluster,
                    placements=b.placements,
                    evictions=b.evictions,
                    dispatched_at=b.dispatched_at,
                    checkpointed=b.checkpointed_at,
                )
        self.entries[b.job_uid] = e
        self._index(b.job_uid, e)

    def _index(self, uid: str, e: Entry) -> None:
        f = e.facts
        if f is None:
            return
        if e.pending is not None:
            self.pending[uid] = e.pending
            self._queue(uid, e.pending)
            if e.pending.excluded_clusters:
                self.expiring.add(uid)
            return
        self._use(f.queue, e.charged or f.min_request, 1, e.ran)
        if e.running is not None:
            self.running[uid] = e.running
            if e.binding.phase in _UNPLACED:
                self.unplaced.setdefault(e.running.cluster, {})[uid] = f.gang

    def _unindex(self, uid: str, e: Entry) -> None:
        f = e.facts
        if f is None:
            return
        if e.pending is not None:
            del self.pending[uid]
            queue = e.pending.queue
            jobs = self.queued[queue]
            del jobs[uid]
            if not jobs:
                del self.queued[queue]
            self._queued_tuples.pop(queue, None)
            self.expiring.discard(uid)
            return
        self._use(f.queue, e.charged or f.min_request, -1, e.ran)
        if e.running is not None:
            del self.running[uid]
            self.unplaced.get(e.running.cluster, {}).pop(uid, None)

    def _expire(self, now: float) -> None:
        """Cluster exclusions end with time, not with a write."""
        for uid in list(self.expiring):
            e = self.entries[uid]
            assert e.facts is not None
            e.pending = self.pending[uid] = pending(e.facts, e.binding, now)
            self._queue(uid, e.pending)
            if not e.pending.excluded_clusters:
                self.expiring.discard(uid)

    def _queue(self, uid: str, job: PendingJob) -> None:
        self.queued.setdefault(job.queue, {})[uid] = job
        self._queued_tuples.pop(job.queue, None)

    def pending_by_queue(self) -> PendingByQueue:
        """The pending jobs per queue; a queue whose jobs did not change since the last call is
        handed the same tuple again."""
        tuples = self._queued_tuples
        out: dict[str, tuple[PendingJob, ...]] = {}
        for queue, jobs in self.queued.items():
            got = tuples.get(queue)
            if got is None:
                got = tuples[queue] = tuple(jobs.values())
            out[queue] = got
        return PendingByQueue(out)

    def _use(self, queue: str, request: ResourceVector, sign: int, ran: ResourceVector | None) -> None:
        acc = self.usage.get(queue)
        if acc is None:
            acc = self.usage[queue] = {}
        for r, v in request.items():
            acc[r] = acc.get(r, 0) + sign * v
        if ran:
            run_acc = self.running_usage.setdefault(queue, {})
            for r, v in ran.items():
                run_acc[r] = run_acc.get(r, 0) + sign * v
        self._usage_vec.pop(queue, None)

    def unplaced_cards(self, cluster: str) -> tuple[tuple[Gang, tuple[Mapping[str, str], ...]], ...]:
        """The cluster's unplaced gangs that take GPU cards, with their GPU annotations."""
        out = []
        for uid, gang in self.unplaced.get(cluster, {}).items():
            f = self.entries[uid].facts
            if f is not None and any(asks_cards(vec) for vec, _ in gang):
                out.append((gang, f.gpu_hints))
        return tuple(out)

    def running_of(self, queue: str) -> ResourceVector:
        """What the placed pods of a queue's admitted jobs hold (the rest of its allocation is
        reserved for gangs not all placed yet)."""
        return ResourceVector({r: v for r, v in self.running_usage.get(queue, {}).items() if v})


def kept_reason(was: Entry | None, b: LiveBinding) -> WrittenReason | None:
    """The reason written for a job that still waits as it did: a binding re-queued since waits
    anew, with the reason its re-queue wrote."""
    if was is None or was.reason is None or was.binding.waiting_since != b.waiting_since:
        return None
    return was.reason


def pending(f: JobFacts, b: LiveBinding, now: float) -> PendingJob:
    return pending_job(f, waiting_since=b.waiting_since, excluded=b.excluded_clusters, now=now)
