"""One dispatch cycle: take the cycle lock, read the snapshot, admit(), write the admissions in one
transaction; then hand what explains them to the Explainer and set the metrics."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

from sqlalchemy.orm import Session

from vglobal.admission import AdmissionResult, Admit, admit
from vglobal.admission.inputs import claim_row
from vglobal.admission.memo import Memo
from vglobal.hub import metrics
from vglobal.hub.context import HubContext
from vglobal.hub.dispatch.explain import Explainer, ExplanationFailed, changed_statuses, changed_waits
from vglobal.hub.dispatch.held import Known, held_by_cluster, queue_rooms, rooms_moved
from vglobal.hub.dispatch.lost_work import lost_work
from vglobal.hub.dispatch.metrics import record_cycle
from vglobal.hub.dispatch.snapshot import SnapshotReader
from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, deliver_to, notify
from vglobal.model.reasons import WaitKind
from vglobal.store.engine import session_scope
from vglobal.store.locks import AdvisoryLock, try_xact_lock
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import claims as claims_repo
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import queues as queues_repo
from vglobal.store.repo.events import NewEvent
from vglobal.store.repo.live import Written

log = logging.getLogger(__name__)

# A whole-job victim's event and the wait reason its re-queue writes, by whether it was preempted
# inside its queue (else reclaimed by another queue).
REQUEUE_REASONS: dict[bool, tuple[str, str]] = {
    True: ("Preempted", "preempted by a higher-priority job of its queue"),
    False: ("Reclaimed", "reclaimed by a queue below its share"),
}


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
    # The CPU the dispatcher's thread used in the snapshot and in the whole cycle: beside the
    # wall times above, what of them was work rather than waiting (on Postgres, for the GIL).
    snapshot_cpu: float = 0.0
    cpu: float = 0.0

    @property
    def decided(self) -> float:
        """From the start of the cycle until its decisions are durable."""
        return self.snapshot + self.admit + self.write_admissions

    @property
    def total(self) -> float:
        return self.decided + self.write_waits


def write_admissions(
    result: AdmissionResult, *, session: Session, lost: Mapping[str, str] | None = None
) -> tuple[list[tuple[str, str, int]], int, Written]:
    """Admissions and reclaims in a few batched statements; returns (uid, cluster, generation) of
    each admission made, how many jobs were reclaimed, and the admitted bindings as written.
    ``lost``: per victim uid, what its event adds of the work it loses (lost_work.py)."""
    lost = lost or {}
    decisions = result.decisions
    admits = [(uid, d.cluster) for uid in result.admitted_order if isinstance(d := decisions[uid], Admit)]
    # A job admitted in place of pods being evicted says so (victims, cluster) until it runs.
    waits = {
        uid: (WaitKind.Preempting.value, d.preempting)
        if d.preempting
        else (WaitKind.Reclaiming.value, d.reclaiming)
        for uid, _ in admits
        if isinstance(d := decisions[uid], Admit) and (d.preempting or d.reclaiming)
    }
    nominated = {
        uid: d.nominated for uid, _ in admits if isinstance(d := decisions[uid], Admit) and d.nominated
    }
    done, written = bindings_repo.admit_written(admits, session=session, waits=waits, nominated=nominated)
    new_events: list[NewEvent] = []
    for preempted in (False, True):
        group = [r for r in result.reclaims if r.preempted == preempted]
        if not group:
            continue
        event, why = REQUEUE_REASONS[preempted]
        victims = bindings_repo.requeue(
            [r.victim_uid for r in group],
            session=session,
            kind=WaitKind.Preempted if preempted else WaitKind.Reclaimed,
            reason=why,
        )
        moved = {u for u, _, _ in victims}
        new_events += [
            NewEvent(
                event,
                r.reason + lost.get(r.victim_uid, ""),
                job_uid=r.victim_uid,
                cluster=r.cluster,
                kind="Warning",
            )
            for r in group
            if r.victim_uid in moved
        ]
    stopped = len(new_events)  # jobs reclaimed or preempted whole
    if result.evictions:
        took = set(
            bindings_repo.add_evictions([(e.job_uid, e.pods) for e in result.evictions], session=session)
        )
        new_events += [
            NewEvent(
                "Reclaimed" if e.reclaimed else "Preempted",
                f"{len(e.pods)} pod{'s' if len(e.pods) != 1 else ''} to evict: {e.reason}"
                + lost.get(e.job_uid, ""),
                job_uid=e.job_uid,
                cluster=e.cluster,
                kind="Warning",
            )
            for e in result.evictions
            if e.job_uid in took
        ]
    # A preemptor's or reclaimer's event says whose place it takes (its run starts once they are
    # gone).
    new_events += [
        NewEvent("Preempting", d.preempting, job_uid=uid, cluster=d.cluster)
        if d.preempting
        else NewEvent("Reclaiming", d.reclaiming, job_uid=uid, cluster=d.cluster)
        for uid, _, _ in done
        if isinstance(d := decisions[uid], Admit) and (d.preempting or d.reclaiming)
    ]
    new_events += [  # admitted onto nodes a pool can add: its agent grows the pool
        NewEvent("Provisioning", d.grows_text, job_uid=uid, cluster=d.cluster)
        for uid, _, _ in done
        if isinstance(d := decisions[uid], Admit) and d.grows
    ]
    new_events += [  # away from where it prefers to run: preempted or reclaimed first among equals
        NewEvent("Away", f"runs away from where it prefers: {d.away}", job_uid=uid, cluster=d.cluster)
        for uid, _, _ in done
        if isinstance(d := decisions[uid], Admit) and d.away
    ]
    new_events += [  # why it landed there: the chosen cluster's placement verdict (describe job)
        NewEvent("Placed", f"placement verdict at admission: {d.placed}", job_uid=uid, cluster=d.cluster)
        for uid, _, _ in done
        if isinstance(d := decisions[uid], Admit) and d.placed
    ]
    events_repo.add_events(new_events, session=session)
    if result.reclaims or result.evictions:
        notify(DELIVER, session=session)  # runs stop too: every stream checks
    elif done:
        notify(DELIVER, session=session, payload=deliver_to(c for _, c, _ in done))
    if result.reclaims:
        notify(FENCE, session=session)
    return done, stopped, written


class Dispatcher:
    """The leader's dispatcher: what it keeps between cycles (``reader``) and the writer of its
    explanations. A cycle that fails leaves the reader holding everything but what the failed
    transactions could have touched, which the next cycle reads again."""

    def __init__(self, ctx: HubContext, *, background: bool = False) -> None:
        self.ctx = ctx
        self.reader = SnapshotReader()
        # What the last cycle derived that the next may take over (admission/memo.py): it changes
        # what a cycle costs, never what it decides.
        self.memo = Memo()
        self.explainer = Explainer(background=background)

    def cycle(self) -> CycleStats:
        """One cycle. Inline, its explanation is written before it returns; in the background,
        while the next cycle runs."""
        started = time.perf_counter()
        # A cycle allocates hundreds of thousands of short-lived objects and creates no reference
        # cycles of note: the cyclic collector would only add pauses, so it waits until the end.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            stats = self._cycle(started)
            if not self.explainer.background:
                self.take_in(before_read=True)
            return stats
        finally:
            if gc_was_enabled:
                gc.enable()

    def take_in(self, *, before_read: bool) -> None:
        """The last explanation's bindings into the cache: applied as written when it committed
        before the cache's next read (that read then skips them), else checked against what that
        read found. If it failed, the reasons it was to write are written again."""
        jobs = self.reader.jobs
        try:
            taken = self.explainer.take()
        except ExplanationFailed as exc:
            jobs.forget_reasons(exc.uids)
            raise
        if taken is None:
            return
        written, now = taken
        if before_read:
            jobs.wrote(written, now)
        else:
            jobs.knows(written)

    def drain(self) -> None:
        """Wait for the explanation in flight; its failure is logged, not raised (the caller
        repairs what it left unwritten)."""
        try:
            self.take_in(before_read=False)
        except ExplanationFailed as exc:
            log.warning("writing the last cycle's explanation failed: %s", exc.__cause__ or exc)

    def restart(self) -> None:
        """Forget everything kept (another replica may have led meanwhile)."""
        self.drain()
        self.reader = SnapshotReader()
        self.memo = Memo()

    def close(self) -> None:
        self.drain()
        self.explainer.close()

    def _facts(self, uid: str) -> Known | None:
        entry = self.reader.jobs.entries.get(uid)
        if entry is None or entry.facts is None:
            return None
        return entry.facts, entry.binding.placements

    def _cycle(self, started: float) -> CycleStats:
        ctx, jobs = self.ctx, self.reader.jobs
        cpu_started = time.thread_time()
        result: AdmissionResult | None = None
        try:
            with session_scope(ctx.sessions) as session:
                # Per-transaction exclusion on top of leadership: two replicas never run a cycle
                # at once.
                if not try_xact_lock(session.connection(), AdvisoryLock.DISPATCH_CYCLE):
                    return CycleStats()
                if self.explainer.committed():  # committed since the last read: this read skips it
                    self.take_in(before_read=True)
                snapshot = self.reader.read(ctx.settings, session=session)
                t_snap, cpu_snap = time.perf_counter(), time.thread_time()
                result = admit(snapshot, self.memo)
                t_admit = time.perf_counter()
                held = held_by_cluster(snapshot, result)
                statuses = changed_statuses(
                    result,
                    self.reader.queue_status,
                    held,
                    self.reader.budgets.status,
                    rooms=queue_rooms(snapshot, result, held, self._facts),
                )
                moved = rooms_moved(statuses, self.reader.queue_status)
                # The victims' checkpoints as they stand now, their rows locked until this commits.
                read = partial(bindings_repo.checkpoints_locked, session=session)
                lost = lost_work(snapshot, result, read, time.time())
                done, reclaimed, admitted = write_admissions(result, session=session, lost=lost)
                claims = [claim_row(c) for c in result.claims]
                if claims != self.reader.claim_rows:  # kept for the next cycle, and the next leader
                    claims_repo.store(claims, session=session)
                if done or moved:
                    # With the admissions: their Dispatches carry the queues' limits and what the
                    # queues hold on other clusters as this cycle counted them, not the last; and
                    # a cluster's room beyond gangs reaches its agent now, not a cycle late.
                    queues_repo.set_statuses(statuses, session=session)
                    statuses = {}
                    if moved:
                        notify(DELIVER, session=session)
                self.reader.fair_usage(ctx.settings).note(snapshot, result, session=session)
                if result.reclaims:
                    notify(DISPATCH, session=session)
            ctx.last_cycle = (snapshot, result)  # committed: what the forecast loop replays
        except BaseException:
            if result is not None:  # rolled back, or committed unbeknown to us: read them again
                jobs.invalidate(
                    [
                        *result.admitted_order,
                        *(r.victim_uid for r in result.reclaims),
                        *(e.job_uid for e in result.evictions),
                    ]
                )
            raise
        # The decisions are durable and the agents told. What only explains them (each
        # admission's Dispatched event, why the others wait, the queues' figures) goes in a
        # transaction of its own: writing it before the commit would double the time until jobs
        # start. A hub that dies in between leaves admissions without their events, which the next
        # leader writes (repair_dispatched); a reason written a cycle late is harmless (the write
        # is conditional on the binding still being Suspended).
        t_admissions = time.perf_counter()
        # The previous cycle's explanation, if still being written when the snapshot was read,
        # first: the cache checks its rows against what it holds before this cycle's admissions
        # change that.
        self.take_in(before_read=False)
        waited = time.perf_counter() - t_admissions
        if not result.reclaims and not result.evictions:
            # else it wrote the victims' bindings too, in the same transaction: the next read
            # must find them, so none of its rows is taken as already known
            jobs.wrote(admitted, snapshot.now)
        now = time.monotonic()
        waits = changed_waits(result, jobs.entries, now)
        self.explainer.write(ctx.sessions, done, waits, statuses, snapshot.now)
        jobs.noted(waits, now)
        entries = jobs.entries
        queue_of = {u: e.facts.queue for u, _, _ in done if (e := entries.get(u)) and e.facts}
        record_cycle(snapshot, result, done, queue_of, reclaimed, self.reader.budgets.status)
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
            snapshot_cpu=cpu_snap - cpu_started,
            cpu=time.thread_time() - cpu_started,
        )
