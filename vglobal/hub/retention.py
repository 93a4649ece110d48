"""History retention: the leader removes jobs finished longer ago than --finished-job-ttl, with
their bindings and events, in batches of ``BATCH`` jobs (one short transaction each), so a big
backlog never holds locks or a transaction for long."""

from __future__ import annotations

import logging
import threading

from vglobal.hub.context import HubContext
from vglobal.hub.leader import Leader
from vglobal.store.engine import session_scope
from vglobal.store.repo import retention as retention_repo

log = logging.getLogger(__name__)

BATCH = 5000
# Batches per pass at most: the rest of a backlog waits for the next pass.
MAX_BATCHES = 100


def remove_old_jobs(ctx: HubContext) -> int:
    """One pass: delete expired jobs a batch at a time until none is left; returns how many."""
    ttl = ctx.settings.finished_job_ttl
    total = 0
    for _ in range(MAX_BATCHES):
        with session_scope(ctx.sessions) as session:
            n = retention_repo.delete_finished_before(ttl, limit=BATCH, session=session)
        total += n
        if n < BATCH:
            break
    if total:
        log.info("removed %d jobs finished more than %gs ago (--finished-job-ttl)", total, ttl)
    return total


def run_retention(ctx: HubContext, leader: Leader, stop: threading.Event, interval: float = 30.0) -> None:
    if ctx.settings.finished_job_ttl <= 0:
        return  # kept forever
    while not stop.wait(min(interval, ctx.settings.finished_job_ttl)):
        if not leader.leading:
            continue
        try:
            remove_old_jobs(ctx)
        except Exception:
            log.exception("removing old finished jobs failed")
