"""The queue history loop (leader only): once every --queue-history-interval it samples each
queue's allocation, share and job counts into Postgres, and prunes samples older than
--queue-history-keep a batch at a time (one short transaction each)."""

from __future__ import annotations

from datetime import datetime, timedelta

from vglobal.hub.context import HubContext
from vglobal.hub.loop_runner import LeaderLoop
from vglobal.hub.retention import in_batches
from vglobal.model.records import QueueSample
from vglobal.model.resources import queue_share
from vglobal.store.engine import session_scope
from vglobal.store.repo import queue_samples as samples_repo
from vglobal.store.repo import queues as queues_repo

PRUNE_BATCH = 5000


def slot(now: datetime, interval: float) -> datetime:
    """The start of the sampling interval ``now`` falls in: a replica that takes over within it
    writes the same time, which the table holds once per queue."""
    epoch = now.timestamp()
    return now - timedelta(seconds=epoch - (epoch // interval) * interval)


def sample_queues(ctx: HubContext) -> int:
    """One sample of every queue, all in one statement; returns how many were taken."""
    at = slot(ctx.now(), ctx.settings.queue_history_interval)
    with session_scope(ctx.sessions) as session:
        usage = queues_repo.usage(session=session)
        samples = []
        for row in queues_repo.list_queues(session=session):
            used = usage.get(row.name)
            allocated = used.allocated if used else {}
            deserved = row.status.get("deserved") or row.deserved or {}
            samples.append(
                QueueSample(
                    queue=row.name,
                    time=at,
                    allocated=allocated,
                    deserved=deserved,
                    capability=row.status.get("capability") or row.capability or {},
                    guarantee=row.guarantee,
                    pending=used.pending if used else 0,
                    running=used.running if used else 0,
                    share=queue_share(allocated, deserved),
                )
            )
        samples_repo.add_samples(samples, session=session)
    return len(samples)


def prune_queue_history(ctx: HubContext, batch: int = PRUNE_BATCH) -> int:
    """Delete samples older than --queue-history-keep, ``batch`` at a time; returns how many."""
    before = ctx.now() - timedelta(seconds=ctx.settings.queue_history_keep)
    return in_batches(ctx, lambda session, n: samples_repo.prune(before, session=session, batch=n), batch)


class QueueHistoryLoop(LeaderLoop):
    """A sample of every queue and a prune each --queue-history-interval, while this hub leads."""

    name = "queue-history"

    def __init__(self, ctx: HubContext) -> None:
        self.ctx = ctx
        self.min_gap = self.max_wait = ctx.settings.queue_history_interval

    def tick(self, woken: bool) -> float:
        sample_queues(self.ctx)
        prune_queue_history(self.ctx)
        return self.max_wait
