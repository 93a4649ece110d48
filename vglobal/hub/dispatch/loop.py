"""The dispatcher loop (leader only): a cycle on every wake-up, debounced, while this hub leads."""

from __future__ import annotations

import logging

import sqlalchemy as sa

from vglobal.hub import metrics
from vglobal.hub.context import HubContext
from vglobal.hub.dispatch.cycle import Dispatcher
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.hub.notify import DISPATCH
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo

log = logging.getLogger(__name__)

DEBOUNCE = 0.05  # let a burst of submits land in one cycle
# Under load, cycle starts at least this far apart: a cycle's cost is mostly per cycle (the
# snapshot, the explanation, the agents' deliveries it wakes), so while commits keep coming
# one cycle takes all of this interval's instead of one cycle per commit. An idle hub still
# starts a cycle DEBOUNCE after a wake-up.
LOADED_GAP = 0.2
# A cycle that admits nothing is logged with its phases when it takes longer than this.
SLOW_CYCLE = 0.5


class DispatchLoop(LeaderLoop):
    name = "dispatcher"
    channels = (DISPATCH,)
    settle = DEBOUNCE
    min_gap = LOADED_GAP

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.max_wait = ctx.settings.dispatch_interval
        self.dispatcher = Dispatcher(ctx, background=True)
        self.fresh = False  # this hub has just become the leader
        self.repair = False  # a cycle failed: its admissions may lack their events

    def lead(self) -> None:
        self.fresh = True

    def follow(self) -> None:
        # The new leader's cycles report the queues and clusters now: this replica's last figures
        # would go on reading as current.
        metrics.forget_cycle()

    def tick(self, woken: bool) -> float:
        """One cycle; returns 0 when it admitted a full budget or look-back (the next starts at once)."""
        try:
            if self.fresh:
                self.fresh = False
                # Another replica may have led meanwhile: what this one remembers may be stale.
                self.dispatcher.restart()
                self.repair = True
            if self.repair:
                # A leader that died mid-cycle, or a cycle that failed, left admissions without
                # their events (this one's last explanation is finished first: none twice).
                self.dispatcher.drain()
                with session_scope(self.ctx.sessions) as session:
                    if n := bindings_repo.repair_dispatched(session=session):
                        log.info("wrote %d Dispatched events a previous cycle did not", n)
                self.repair = False
            stats = self.dispatcher.cycle()
            if stats.admitted or stats.total > SLOW_CYCLE:
                log.info(
                    "cycle %.3f s (cpu %.3f): pending %d, admitted %d; snapshot %.3f (cpu %.3f), "
                    "admit %.3f, write %.3f, explain %.3f (waited %.3f), %d reasons",
                    stats.total, stats.cpu, stats.pending, stats.admitted, stats.snapshot,
                    stats.snapshot_cpu, stats.admit, stats.write_admissions, stats.write_waits,
                    stats.waited, stats.reasons_written,
                )  # fmt: skip
        except sa.exc.SQLAlchemyError as exc:
            log.warning("dispatch cycle failed, will retry: %s", exc)
            self.repair = True
            return self.max_wait
        except Exception:
            log.exception("dispatch cycle failed")
            self.repair = True
            return self.max_wait
        # A cycle that admitted its budget, or a whole queue's look-back of jobs, likely left
        # admissible jobs behind: the next starts at once (min_gap apart) instead of when the
        # next commit wakes it (measured: ~0.15 s of each 1-1.5 s cycle in the pipeline bench).
        settings = self.ctx.settings
        budget, lookback = settings.max_admissions, settings.queue_lookback
        full = (budget > 0 and stats.admitted >= budget) or (lookback > 0 and stats.admitted >= lookback)
        return 0.0 if full else self.max_wait

    def close(self) -> None:
        self.dispatcher.close()  # what the last cycle explains is written before the hub lets go
