"""The change-log loop (leader only): gives committed job changes their revisions, prunes old ones.

Woken by the NOTIFY the change triggers send on commit; after numbering it notifies every
replica's watch feed. Only the leader numbers, but numbering is safe from anywhere (it locks the
``job_watch`` row), so two hubs that both believe they lead do no harm.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from vglobal.hub.context import HubContext
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.hub.notify import JOB_CHANGES, REVISIONS, notify
from vglobal.store.engine import session_scope
from vglobal.store.repo import job_changes as changes_repo

log = logging.getLogger(__name__)

MIN_GAP = 0.02  # seconds: a burst of commits is numbered together, and watchers hear soon
MAX_WAIT = 1.0  # a NOTIFY lost while the listener reconnects delays events this long at most
PRUNE_EVERY = 30.0  # seconds


class ChangeLog(LeaderLoop):
    name = "watch log"
    channels = (JOB_CHANGES,)
    min_gap = MIN_GAP
    max_wait = MAX_WAIT

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.pruned_at = 0.0  # monotonic

    def tick(self, woken: bool) -> float:
        with session_scope(self.ctx.sessions) as session:
            n, _ = changes_repo.sequence(session=session)
            if n:
                notify(REVISIONS, session=session)
        if time.monotonic() - self.pruned_at >= PRUNE_EVERY:
            self.prune()
        return MAX_WAIT

    def prune(self) -> None:
        s = self.ctx.settings
        with session_scope(self.ctx.sessions) as session:
            older_than = self.ctx.now() - timedelta(seconds=s.watch_keep_for)
            n = changes_repo.prune(session=session, keep=s.watch_keep_changes, older_than=older_than)
        self.pruned_at = time.monotonic()
        if n:
            log.info("pruned %d job changes from the watch log", n)
