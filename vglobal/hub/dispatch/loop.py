"""The dispatcher loop (leader only): a cycle on every wake-up, debounced, while this hub leads."""

from __future__ import annotations

import logging
import threading
import time

import sqlalchemy as sa

from vglobal.hub import metrics
from vglobal.hub.context import HubContext
from vglobal.hub.dispatch.cycle import Dispatcher
from vglobal.hub.leader import Leader
from vglobal.hub.notify import DISPATCH
from vglobal.store.engine import session_scope
from vglobal.store.repo import bindings as bindings_repo

log = logging.getLogger(__name__)

DEBOUNCE = 0.05  # let a burst of submits land in one cycle


def run_dispatcher(ctx: HubContext, leader: Leader, stop: threading.Event) -> None:
    dispatcher = Dispatcher(ctx, background=True)
    try:
        _dispatch_while_leading(dispatcher, leader, stop)
    finally:
        dispatcher.close()  # what the last cycle explains is written before the hub lets go


def _dispatch_while_leading(dispatcher: Dispatcher, leader: Leader, stop: threading.Event) -> None:
    ctx = dispatcher.ctx
    seen = ctx.wakeups.seq(DISPATCH)
    leading = False
    repair = False  # a cycle failed: its admissions may lack their events
    more = False  # the last cycle stopped at its admission budget: the next one starts at once
    while not stop.is_set():
        seen = ctx.wakeups.wait(DISPATCH, seen, timeout=0.0 if more else ctx.settings.dispatch_interval)
        more = False
        if stop.is_set():
            break
        time.sleep(DEBOUNCE)
        was_leading = leading
        leading = leader.check()
        metrics.LEADER.set(1 if leading else 0)
        if not leading:
            continue
        try:
            if not was_leading:
                # Another replica may have led meanwhile: what this one remembers may be stale.
                dispatcher.restart()
            if not was_leading or repair:
                # A leader that died mid-cycle, or a cycle that failed, left admissions without
                # their events (this one's last explanation is finished first: none twice).
                dispatcher.drain()
                with session_scope(ctx.sessions) as session:
                    if n := bindings_repo.repair_dispatched(session=session):
                        log.info("wrote %d Dispatched events a previous cycle did not", n)
                repair = False
            stats = dispatcher.cycle()
            budget = ctx.settings.max_admissions_per_cycle
            more = budget > 0 and stats.admitted >= budget
        except sa.exc.SQLAlchemyError as exc:
            log.warning("dispatch cycle failed, will retry: %s", exc)
            repair = True
        except Exception:
            log.exception("dispatch cycle failed")
            repair = True
