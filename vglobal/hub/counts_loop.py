"""The job counts loop (leader only): every few seconds it folds the counts table's appended
rows into one per key (store/repo/job_counts.py), so a count reads a row per key, not a row per
change since the last fold."""

from __future__ import annotations

from vglobal.hub.context import HubContext
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.store.engine import session_scope
from vglobal.store.repo import job_counts

INTERVAL = 5.0  # seconds between folds: at 500 changes a second, a few thousand rows at most


class JobCountsLoop(LeaderLoop):
    name = "job-counts"

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.min_gap = self.max_wait = INTERVAL

    def tick(self, woken: bool) -> float:
        with session_scope(self.ctx.sessions) as session:
            job_counts.compact(session=session)
        return self.max_wait
