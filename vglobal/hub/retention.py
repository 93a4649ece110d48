"""History retention: the leader removes jobs finished longer ago than --finished-job-ttl, with
their bindings and events, in batches of ``BATCH`` jobs (one short transaction each), so a big
backlog never holds locks or a transaction for long."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.orm import Session

from vglobal.hub.context import HubContext
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.store.engine import session_scope
from vglobal.store.repo import retention as retention_repo

log = logging.getLogger(__name__)

BATCH = 5000
# Batches per pass at most: the rest of a backlog waits for the next pass.
MAX_BATCHES = 100
INTERVAL = 30.0  # seconds between passes at most


def in_batches(ctx: HubContext, delete: Callable[[Session, int], int], batch: int) -> int:
    """``delete(session, batch)`` in a transaction of its own each, until it deletes fewer than
    ``batch`` (at most MAX_BATCHES times a pass); returns how many it deleted."""
    total = 0
    for _ in range(MAX_BATCHES):
        with session_scope(ctx.sessions) as session:
            n = delete(session, batch)
        total += n
        if n < batch:
            break
    return total


def remove_old_jobs(ctx: HubContext) -> int:
    """One pass: delete expired jobs a batch at a time until none is left; returns how many."""
    ttl = ctx.settings.finished_job_ttl
    total = in_batches(
        ctx, lambda session, n: retention_repo.delete_finished_before(ttl, limit=n, session=session), BATCH
    )
    if total:
        log.info("removed %d jobs finished more than %gs ago (--finished-job-ttl)", total, ttl)
    return total


class RetentionLoop(LeaderLoop):
    """A pass every ``INTERVAL`` seconds, or every --finished-job-ttl if that is shorter; none at
    all while the TTL is 0 (finished jobs are kept forever)."""

    name = "retention"

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.min_gap = self.max_wait = min(INTERVAL, ctx.settings.finished_job_ttl)

    def tick(self, woken: bool) -> float:
        remove_old_jobs(self.ctx)
        return self.max_wait
