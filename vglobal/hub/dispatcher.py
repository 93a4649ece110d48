"""The dispatcher loop (leader only): snapshot → admit() → one transaction of decisions."""

from __future__ import annotations

import gc
import logging
import threading
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.orm import Session

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


def write_waits(result: AdmissionResult, written: dict[str, str], *, session: Session) -> int:
    """Why each job waits, in one statement; ``written`` remembers what this process stored, so a
    reason that did not change (most of them, cycle after cycle) is not sent again."""
    waits = [
        (uid, d.reason)
        for uid, d in result.decisions.items()
        if isinstance(d, Wait) and written.get(uid) != d.reason
    ]
    bindings_repo.set_reasons(waits, session=session)
    written.update(waits)
    return len(waits)


def write_admissions(result: AdmissionResult, queue_of: dict[str, str], *, session: Session) -> int:
    """Admissions and reclaims in a few batched statements; returns how many were admitted."""
    admits = [(uid, d.cluster) for uid, d in result.decisions.items() if isinstance(d, Admit)]
    done = bindings_repo.admit(admits, session=session)
    new_events = [
        NewEvent(
            "Dispatched", f"admitted to cluster {cluster} (generation {gen})", job_uid=uid, cluster=cluster
        )
        for uid, cluster, gen in done
    ]
    if result.reclaims:
        victims = bindings_repo.requeue(
            [r.victim_uid for r in result.reclaims],
            session=session,
            reason="reclaimed by a queue below its share",
        )
        moved = {u for u, _, _ in victims}
        for r in result.reclaims:
            if r.victim_uid in moved:
                new_events.append(
                    NewEvent("Reclaimed", r.reason, job_uid=r.victim_uid, cluster=r.cluster, kind="Warning")
                )
                metrics.RECLAIMS.inc()
    events_repo.add_events(new_events, session=session)
    per_pair: dict[tuple[str, str], int] = {}
    for uid, cluster, gen in done:
        key = (queue_of.get(uid, ""), cluster)
        per_pair[key] = per_pair.get(key, 0) + 1
        log.info("admit job=%s queue=%s cluster=%s generation=%d", uid, key[0], cluster, gen)
    for (queue, cluster), n in per_pair.items():
        metrics.ADMISSIONS.labels(queue=queue, cluster=cluster).inc(n)
    if done or result.reclaims:
        notify(DELIVER, session=session)
    return len(done)


@dataclass
class CycleStats:
    """Where one cycle's time went (seconds) and what it decided."""

    pending: int = 0
    admitted: int = 0
    snapshot: float = 0.0
    admit: float = 0.0
    write_admissions: float = 0.0  # binding updates, reclaims and their events
    write_waits: float = 0.0  # changed wait reasons
    commit: float = 0.0  # queue figures and the commit

    @property
    def write(self) -> float:
        return self.write_admissions + self.write_waits + self.commit

    @property
    def total(self) -> float:
        return self.snapshot + self.admit + self.write


def dispatch_cycle(ctx: HubContext) -> CycleStats:
    started = time.perf_counter()
    # A cycle allocates hundreds of thousands of short-lived objects and creates no reference
    # cycles of note: the cyclic collector would only add pauses, so it waits until the end.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _cycle(ctx, started)
    finally:
        if gc_was_enabled:
            gc.enable()


def _cycle(ctx: HubContext, started: float) -> CycleStats:
    stats = CycleStats()
    with session_scope(ctx.sessions) as session:
        # Per-transaction exclusion on top of leadership: two replicas never run a cycle at once.
        if not try_xact_lock(session.connection(), AdvisoryLock.DISPATCH_CYCLE):
            return stats
        snapshot = build_snapshot(ctx.settings, ctx.snapshot_cache, session=session)
        t_snap = time.perf_counter()
        result = admit(snapshot)
        t_admit = time.perf_counter()
        queue_of = {p.uid: p.queue for p in snapshot.pending}
        admitted = write_admissions(result, queue_of, session=session)
        t_admissions = time.perf_counter()
        for uid, d in result.decisions.items():
            if isinstance(d, Admit):
                ctx.snapshot_cache.reasons.pop(uid, None)
        write_waits(result, ctx.snapshot_cache.reasons, session=session)
        t_waits = time.perf_counter()
        queues_repo.set_statuses(
            {
                name: {
                    "deserved": dict(q.deserved.items()),
                    "capability": None if q.real_capability is None else dict(q.real_capability.items()),
                }
                for name, q in result.queues.items()
            },
            session=session,
        )
        if result.reclaims:
            notify(DISPATCH, session=session)
    done = time.perf_counter()
    stats = CycleStats(
        pending=len(snapshot.pending),
        admitted=admitted,
        snapshot=t_snap - started,
        admit=t_admit - t_snap,
        write_admissions=t_admissions - t_admit,
        write_waits=t_waits - t_admissions,
        commit=done - t_waits,
    )
    metrics.CYCLE_SECONDS.observe(done - started)
    metrics.PENDING.set(len(snapshot.pending) - admitted)
    for name, q in result.queues.items():
        for r, v in q.allocated.items():
            metrics.QUEUE_ALLOCATED.labels(queue=name, resource=r).set(v)
        for r, v in q.deserved.items():
            metrics.QUEUE_DESERVED.labels(queue=name, resource=r).set(v)
        for r, v in (q.real_capability or {}).items():
            metrics.QUEUE_CAPABILITY.labels(queue=name, resource=r).set(v)
        metrics.QUEUE_PENDING.labels(queue=name).set(q.pending)
        metrics.QUEUE_RUNNING.labels(queue=name).set(q.running)
    for c in snapshot.clusters:
        metrics.CLUSTER_READY.labels(cluster=c.name).set(1 if c.schedulable else 0)
        free: dict[str, int] = {}
        for n in c.nodes:
            for r, v in n.free.items():
                free[r] = free.get(r, 0) + v
        for r, v in free.items():
            metrics.CLUSTER_FREE.labels(cluster=c.name, resource=r).set(v)
    return stats


def run_dispatcher(ctx: HubContext, leader: Leader, stop: threading.Event) -> None:
    seen = ctx.wakeups.seq(DISPATCH)
    leading = False
    while not stop.is_set():
        seen = ctx.wakeups.wait(DISPATCH, seen, timeout=ctx.settings.dispatch_interval)
        if stop.is_set():
            break
        time.sleep(DEBOUNCE)  # let a burst of submits land in one cycle
        was_leading = leading
        leading = leader.check()
        metrics.LEADER.set(1 if leading else 0)
        if not leading:
            continue
        if not was_leading:
            # Another replica may have led meanwhile: what this one remembers may be stale.
            ctx.snapshot_cache = SnapshotCache()
        try:
            dispatch_cycle(ctx)
        except sa.exc.SQLAlchemyError as exc:
            log.warning("dispatch cycle failed, will retry: %s", exc)
        except Exception:
            log.exception("dispatch cycle failed")
