"""The dispatcher loop (leader only): snapshot → admit() → one transaction of decisions."""

from __future__ import annotations

import gc
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from vglobal.admission import AdmissionResult, Admit, Wait, admit
from vglobal.hub import metrics
from vglobal.hub.context import HubContext
from vglobal.hub.leader import Leader
from vglobal.hub.notify import DELIVER, DISPATCH, notify
from vglobal.hub.snapshot import SnapshotCache, build_snapshot
from vglobal.store.engine import session_scope
from vglobal.store.locks import AdvisoryLock, try_xact_lock
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.events import NewEvent

log = logging.getLogger(__name__)

DEBOUNCE = 0.05


# A wait reason whose kind is unchanged but whose figures moved (what a cluster can hold, how much
# a queue has) is rewritten at most this often: in a busy system most figures move every cycle,
# and rewriting tens of thousands of rows each second would cost more than the cycle itself.
REASON_REFRESH = 30.0
# At most this many such refreshes per cycle: reasons first written together fall due together,
# and rewriting them all in one cycle would make that cycle slow. The rest follow next cycle.
REFRESH_PER_CYCLE = 2000
# At most this many reasons are written per cycle in all (new kinds and first ones before any
# refresh): 100k jobs submitted at once would otherwise make their first cycle write 100k rows,
# about a second. The rest follow in the next cycles; until then a job shows the reason last
# written, or that the dispatcher has not looked at it yet.
REASONS_PER_CYCLE = 5_000
_SCAN_CHUNK = 8192  # decisions compared with what was written per step (see changed_waits)


def _kind(reason: str) -> str:
    """What a reason is about, without its figures: the text before the first colon."""
    return reason.split(":", 1)[0]


def changed_waits(
    result: AdmissionResult, written: dict[str, tuple[str, float]], now: float
) -> list[tuple[str, str]]:
    """Why each job waits, where that differs from what this process last stored (``written``):
    a new kind of reason at once, the same kind with new figures after REASON_REFRESH seconds
    (REFRESH_PER_CYCLE of them at most); REASONS_PER_CYCLE in all, new kinds first."""
    get = written.get
    unwritten = ("", 0.0)
    out: list[tuple[str, str]] = []
    refreshed: list[tuple[str, str]] = []
    stale = now - REASON_REFRESH
    # Reasons repeat across jobs (one text per queue and shape, say): each text's kind is worked
    # out once, and so is whether a pair of texts is of one kind.
    kinds: dict[str, str] = {"": ""}
    same: dict[tuple[str, str], bool] = {}
    items = iter(result.decisions.items())
    while len(out) < REASONS_PER_CYCLE:  # once the cycle's budget is new kinds, the rest can wait
        # The unchanged (almost all of them) are left out by a comprehension: a loop costs 3x
        # more. A chunk at a time, so that a burst of first reasons stops the scan early.
        chunk = list(islice(items, _SCAN_CHUNK))
        if not chunk:
            break
        moved = [
            (uid, d.reason, old)
            for uid, d in chunk
            if type(d) is Wait and (old := get(uid, unwritten))[0] != d.reason
        ]
        for uid, reason, (was, at) in moved:
            pair = (was, reason)
            alike = same.get(pair)
            if alike is None:
                for text in pair:
                    if text not in kinds:
                        kinds[text] = _kind(text)
                alike = same[pair] = bool(was) and kinds[was] == kinds[reason]
            if alike:
                if at <= stale and len(refreshed) < REFRESH_PER_CYCLE:
                    refreshed.append((uid, reason))
            elif len(out) < REASONS_PER_CYCLE:
                out.append((uid, reason))
    return out + refreshed[: REASONS_PER_CYCLE - len(out)]


def changed_statuses(result: AdmissionResult, stored: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The queues' figures (deserved, realCap) where they differ from those stored with the queue
    when the snapshot was read: most queues' figures hold from one cycle to the next."""
    out = {}
    for name, q in result.queues.items():
        status = {
            "deserved": dict(q.deserved.items()),
            "capability": None if q.real_capability is None else dict(q.real_capability.items()),
        }
        if stored.get(name) != status:
            out[name] = status
    return out


def write_admissions(
    result: AdmissionResult, *, session: Session
) -> tuple[list[tuple[str, str, int]], int, bindings_repo.Written]:
    """Admissions and reclaims in a few batched statements; returns (uid, cluster, generation) of
    each admission made, how many jobs were reclaimed, and the admitted bindings as written."""
    decisions = result.decisions
    admits = [(uid, d.cluster) for uid in result.admitted_order if isinstance(d := decisions[uid], Admit)]
    done, written = bindings_repo.admit_written(admits, session=session)
    new_events: list[NewEvent] = []
    if result.reclaims:
        victims = bindings_repo.requeue(
            [r.victim_uid for r in result.reclaims],
            session=session,
            reason="reclaimed by a queue below its share",
        )
        moved = {u for u, _, _ in victims}
        new_events = [
            NewEvent("Reclaimed", r.reason, job_uid=r.victim_uid, cluster=r.cluster, kind="Warning")
            for r in result.reclaims
            if r.victim_uid in moved
        ]
    events_repo.add_events(new_events, session=session)
    if done or result.reclaims:
        notify(DELIVER, session=session)
    return done, len(new_events), written


def record_admissions(done: list[tuple[str, str, int]], queue_of: dict[str, str]) -> None:
    """Logs and the admissions counter, once the admissions are committed."""
    per_pair: dict[tuple[str, str], int] = {}
    debug = log.isEnabledFor(logging.DEBUG)
    for uid, cluster, gen in done:
        key = (queue_of.get(uid, ""), cluster)
        per_pair[key] = per_pair.get(key, 0) + 1
        if debug:
            log.debug("admit job=%s queue=%s cluster=%s generation=%d", uid, key[0], cluster, gen)
    for (queue, cluster), n in per_pair.items():
        metrics.ADMISSIONS.labels(queue=queue, cluster=cluster).inc(n)
    if done:
        per_cluster: dict[str, int] = {}
        for (_, cluster), n in per_pair.items():
            per_cluster[cluster] = per_cluster.get(cluster, 0) + n
        log.info(
            "admitted %d jobs: %s", len(done), ", ".join(f"{c}={n}" for c, n in sorted(per_cluster.items()))
        )


@dataclass
class CycleStats:
    """Where one cycle's time went (seconds) and what it decided."""

    pending: int = 0
    admitted: int = 0
    snapshot: float = 0.0
    admit: float = 0.0
    write_admissions: float = 0.0  # binding updates, reclaims and the commit
    # After the commit: taking in the previous explanation, working out this one's reasons and
    # handing them to the Explainer (which writes them there and then when inline), the metrics.
    write_waits: float = 0.0
    reasons_written: int = 0
    # Of write_waits, waiting for the previous cycle's explanation to commit (see Explainer).
    waited: float = 0.0

    @property
    def decided(self) -> float:
        """From the start of the cycle until its decisions are durable."""
        return self.snapshot + self.admit + self.write_admissions

    @property
    def total(self) -> float:
        return self.decided + self.write_waits


def _explain(
    sessions: sessionmaker[Session],
    done: list[tuple[str, str, int]],
    waits: list[tuple[str, str]],
    statuses: dict[str, dict[str, Any]],
) -> tuple[bindings_repo.Written, float]:
    """What only explains a cycle's decisions, in one transaction: each admission's Dispatched
    event, why the others wait, the queues' figures. Returns the bindings as it wrote them (its
    only binding write) and how long it took."""
    started = time.perf_counter()
    with session_scope(sessions) as session:
        bindings_repo.log_dispatched(done, session=session)
        written = bindings_repo.set_reasons(waits, session=session)
        queues_repo.set_statuses(statuses, session=session)
    return written, time.perf_counter() - started


class Explainer:
    """Writes each cycle's explanation (``_explain``) after its admissions have committed.

    In the background (the hub's way) it runs on a thread of its own while the next cycle reads
    and decides: it is mostly Postgres's work, which then overlaps the cycle's Python. The next
    cycle takes it in once its own admissions are durable, and raises its error if it failed.
    Inline (``background=False``), it is written before ``dispatch_cycle`` returns.
    """

    def __init__(self, *, background: bool) -> None:
        self.background = background
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="explain") if background else None
        self._pending: Future[tuple[bindings_repo.Written, float]] | None = None
        self._now = 0.0  # the clock of the snapshot the explanation in flight explains
        self.seconds = 0.0  # how long the last explanation taken in took to write

    def write(
        self,
        sessions: sessionmaker[Session],
        done: list[tuple[str, str, int]],
        waits: list[tuple[str, str]],
        statuses: dict[str, dict[str, Any]],
        now: float,
    ) -> None:
        assert self._pending is None, "the previous explanation was not taken in"
        job = partial(_explain, sessions, done, waits, statuses)
        self._now = now
        if self._pool is not None:
            self._pending = self._pool.submit(job)
            return
        written = job()  # an error leaves nothing pending: the caller sees it at once
        self._pending = Future()
        self._pending.set_result(written)

    def committed(self) -> bool:
        """Whether an explanation is waiting to be taken in, already committed."""
        return self._pending is not None and self._pending.done()

    def take(self) -> tuple[bindings_repo.Written, float] | None:
        """The last explanation's bindings as written and the clock of the snapshot it explains,
        once it has committed (None if there is none); its error if it failed."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        written, self.seconds = pending.result()
        return written, self._now

    def drain(self) -> None:
        """Wait for the explanation in flight; its error is logged, not raised."""
        try:
            self.take()
        except Exception as exc:  # the caller repairs what it left unwritten
            log.warning("writing the last cycle's explanation failed: %s", exc)

    def close(self) -> None:
        self.drain()
        if self._pool is not None:
            self._pool.shutdown()


def dispatch_cycle(ctx: HubContext, explainer: Explainer | None = None) -> CycleStats:
    """One cycle. With an inline ``explainer`` (or none) its explanation is written before it
    returns; with a background one, while the next cycle runs (see Explainer)."""
    started = time.perf_counter()
    # A cycle allocates hundreds of thousands of short-lived objects and creates no reference
    # cycles of note: the cyclic collector would only add pauses, so it waits until the end.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    explaining = Explainer(background=False) if explainer is None else explainer
    try:
        stats = _cycle(ctx, started, explaining)
        if not explaining.background:
            _take_in(ctx.snapshot_cache, explaining, before_read=True)
        return stats
    except BaseException:
        # A cycle that failed part-way may have left the cache between its two transactions:
        # the next cycle reads everything again.
        ctx.snapshot_cache = SnapshotCache()
        raise
    finally:
        if gc_was_enabled:
            gc.enable()


def _take_in(cache: SnapshotCache, explainer: Explainer, *, before_read: bool) -> None:
    """The explanation's bindings into the cache: applied as written when it committed before the
    cache's next read (that read then skips them), else checked against what that read found."""
    taken = explainer.take()
    if taken is None:
        return
    written, now = taken
    if before_read:
        cache.wrote(written, now)
    else:
        cache.knows(written)


def _cycle(ctx: HubContext, started: float, explainer: Explainer) -> CycleStats:
    cache = ctx.snapshot_cache
    with session_scope(ctx.sessions) as session:
        # Per-transaction exclusion on top of leadership: two replicas never run a cycle at once.
        if not try_xact_lock(session.connection(), AdvisoryLock.DISPATCH_CYCLE):
            return CycleStats()
        if explainer.committed():  # committed since the last read: this read need not fetch it
            _take_in(cache, explainer, before_read=True)
        snapshot = build_snapshot(ctx.settings, cache, session=session)
        t_snap = time.perf_counter()
        result = admit(snapshot)
        t_admit = time.perf_counter()
        done, reclaimed, admitted = write_admissions(result, session=session)
        if result.reclaims:
            notify(DISPATCH, session=session)
    # The decisions are durable and the agents told. What only explains them (each admission's
    # Dispatched event, why the others wait, the queues' figures) goes in a transaction of its
    # own: writing it before the commit would double the time until jobs start. A hub that dies
    # in between leaves admissions without their events, which the next leader writes
    # (repair_dispatched); a reason written a cycle late is harmless (the write is conditional on
    # the binding still being Suspended).
    t_admissions = time.perf_counter()
    # The previous cycle's explanation, if still being written when the snapshot was read, first:
    # the cache checks its rows against what it holds before this cycle's admissions change that.
    _take_in(cache, explainer, before_read=False)
    waited = time.perf_counter() - t_admissions
    if not result.reclaims:  # else it wrote the reclaimed bindings too: the next read finds them all
        cache.wrote(admitted, snapshot.now)
    for uid in result.admitted_order:
        cache.reasons.pop(uid, None)
    now = time.monotonic()
    waits = changed_waits(result, cache.reasons, now)
    explainer.write(ctx.sessions, done, waits, changed_statuses(result, cache.queue_status), snapshot.now)
    cache.reasons.update((uid, (reason, now)) for uid, reason in waits)
    # Every metric of the cycle changes here, together, so a scrape sees the admissions counted
    # together with the queue figures they moved.
    facts = cache.jobs
    record_admissions(done, {u: facts[u].queue for u, _, _ in done if u in facts})
    metrics.RECLAIMS.inc(reclaimed)
    metrics.PENDING.set(len(snapshot.pending) - len(done))
    set_gauge = metrics.set_gauge
    for name, q in result.queues.items():
        for r, v in q.allocated.items():
            set_gauge(metrics.QUEUE_ALLOCATED, v, name, r)
        for r, v in q.deserved.items():
            set_gauge(metrics.QUEUE_DESERVED, v, name, r)
        for r, v in (q.real_capability or {}).items():
            set_gauge(metrics.QUEUE_CAPABILITY, v, name, r)
        set_gauge(metrics.QUEUE_PENDING, q.pending, name)
        set_gauge(metrics.QUEUE_RUNNING, q.running, name)
    for c in snapshot.clusters:
        set_gauge(metrics.CLUSTER_READY, 1 if c.schedulable else 0, c.name)
        free: dict[str, int] = {}
        for n in c.nodes:
            for r, v in n.free.items():
                free[r] = free.get(r, 0) + v
        for r, v in free.items():
            set_gauge(metrics.CLUSTER_FREE, v, c.name, r)
    finished = time.perf_counter()
    metrics.CYCLE_SECONDS.observe(finished - started)
    return CycleStats(
        pending=len(snapshot.pending),
        admitted=len(done),
        snapshot=t_snap - started,
        admit=t_admit - t_snap,
        write_admissions=t_admissions - t_admit,
        write_waits=finished - t_admissions,
        reasons_written=len(waits),
        waited=waited,
    )


def run_dispatcher(ctx: HubContext, leader: Leader, stop: threading.Event) -> None:
    explainer = Explainer(background=True)
    try:
        _dispatch_while_leading(ctx, leader, stop, explainer)
    finally:
        explainer.close()  # what the last cycle explains is written before the hub lets go


def _dispatch_while_leading(
    ctx: HubContext, leader: Leader, stop: threading.Event, explainer: Explainer
) -> None:
    seen = ctx.wakeups.seq(DISPATCH)
    leading = False
    repair = False  # a cycle failed: its admissions may lack their events
    more = False  # the last cycle stopped at its admission budget: the next one starts at once
    while not stop.is_set():
        seen = ctx.wakeups.wait(DISPATCH, seen, timeout=0.0 if more else ctx.settings.dispatch_interval)
        more = False
        if stop.is_set():
            break
        time.sleep(DEBOUNCE)  # let a burst of submits land in one cycle
        was_leading = leading
        leading = leader.check()
        metrics.LEADER.set(1 if leading else 0)
        if not leading:
            continue
        try:
            if not was_leading or repair:
                # Another replica may have led meanwhile: what this one remembers may be stale,
                # and a leader that died mid-cycle left admissions without their events (this
                # one's last explanation is finished first, so it is not written twice).
                explainer.drain()
                ctx.snapshot_cache = SnapshotCache()
                with session_scope(ctx.sessions) as session:
                    if n := bindings_repo.repair_dispatched(session=session):
                        log.info("wrote %d Dispatched events a previous cycle did not", n)
                repair = False
            stats = dispatch_cycle(ctx, explainer)
            budget = ctx.settings.max_admissions_per_cycle
            more = budget > 0 and stats.admitted >= budget
        except sa.exc.SQLAlchemyError as exc:
            log.warning("dispatch cycle failed, will retry: %s", exc)
            repair = True
        except Exception:
            log.exception("dispatch cycle failed")
            repair = True
