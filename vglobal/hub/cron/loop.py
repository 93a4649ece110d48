"""The cron loop (leader only): looks at each CronJob when its schedule says and when its jobs change.

Times come from the hub's clock (``HubContext.clock``); the loop sleeps until the earliest next
time any CronJob asked for, or until a CronJob is applied or changed, or a job changes (a run
finishing frees a Forbid CronJob and may push one over its history limit).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime

from vglobal.hub import metrics
from vglobal.hub.context import HubContext
from vglobal.hub.cron.look import look_at_cron
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.hub.notify import JOB_CHANGES, WORKFLOWS
from vglobal.store.engine import session_scope
from vglobal.store.repo import cronjobs as cron_repo

log = logging.getLogger(__name__)

MIN_GAP = 0.2  # seconds between looks, so a burst of job changes makes one
MAX_WAIT = 10.0  # a clock that jumps is noticed at most this late
FAILED_BACKOFF = 30.0  # a look that failed is not tried again for this long (seconds)


class CronLoop(LeaderLoop):
    name = "cron"
    channels = (WORKFLOWS, JOB_CHANGES)
    min_gap = MIN_GAP
    max_wait = MAX_WAIT

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        # The scheduled time of each CronJob reported held back by Forbid, reported once.
        self.skipped: dict[str, datetime] = {}
        self.failed_until: dict[str, float] = {}  # monotonic seconds

    def tick(self, woken: bool) -> float:
        """Look at every CronJob after a notification, else at those due; returns the seconds
        until the next is due."""
        ctx = self.ctx
        now = ctx.now()
        with session_scope(ctx.sessions) as session:
            uids = cron_repo.uids(session=session, due_at=None if woken else now)
        for uid in uids:
            if self.failed_until.get(uid, 0.0) <= time.monotonic():
                self._look(uid, now)
        with session_scope(ctx.sessions) as session:
            earliest = cron_repo.earliest_next_time(session=session)
        return MAX_WAIT if earliest is None else (earliest - ctx.now()).total_seconds()

    def _look(self, uid: str, now: datetime) -> None:
        try:
            with session_scope(self.ctx.sessions) as session:
                look = look_at_cron(uid, now=now, session=session, skipped=self.skipped.get(uid))
        except Exception:
            # One CronJob's trouble (a template the model now refuses, say) stops no other.
            log.exception("cron: the look at CronJob %s failed", uid)
            self.failed_until[uid] = time.monotonic() + FAILED_BACKOFF
            return
        self.failed_until.pop(uid, None)
        if look is None or look.skipped is None:
            self.skipped.pop(uid, None)
        else:
            self.skipped[uid] = look.skipped
        for e in look.events if look is not None else ():
            log.info("cronjob %s: %s: %s", look.cron.key if look else uid, e.reason, e.message)
            if look is not None and e.reason == "SuccessfulCreate":  # committed
                metrics.CRON_RUNS.labels(look.row.namespace, look.row.name).inc()
