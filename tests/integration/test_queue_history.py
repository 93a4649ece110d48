"""The queue history: the leader samples each queue once per interval (only the leader), the API
reads a time range (thinned on request), and samples older than --queue-history-keep are pruned
in batches."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from tests.integration.test_snapshot_reads import new_job
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub import queue_history
from vglobal.hub.context import HubContext
from vglobal.hub.leader import Leader
from vglobal.hub.loop_runner import LoopState, run_leader_loop
from vglobal.hub.queue_history import QueueHistoryLoop
from vglobal.hub.server import Hub
from vglobal.model.records import QueueSample
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.locks import AdvisoryLock, try_session_lock
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import queue_samples as samples_repo


def count(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM queue_samples")).scalar_one())


def test_only_the_leader_samples(engine: sa.Engine, database_url: str) -> None:
    ctx = HubContext(
        HubSettings(database_url=database_url, queue_history_interval=0.05), engine, make_sessionmaker(engine)
    )
    leader, stop, state = Leader(engine), threading.Event(), LoopState("queue-history")
    loop = QueueHistoryLoop(ctx)
    thread = threading.Thread(target=run_leader_loop, args=(loop, ctx, leader, stop, state))
    with engine.connect() as other:
        assert try_session_lock(other, AdvisoryLock.HUB_LEADER)  # another replica leads
        other.commit()
        thread.start()
        try:
            assert state.wait_checks(3, timeout=30)  # it asked, and was told no, three times
            assert count(engine) == 0
        except BaseException:
            stop.set()
            raise
        other.execute(sa.text("SELECT pg_advisory_unlock_all()"))
        other.commit()
    try:
        deadline = time.monotonic() + 30
        while count(engine) < 3 and time.monotonic() < deadline:
            stop.wait(0.05)
        assert count(engine) >= 3  # the "default" queue, one sample per interval
    finally:
        stop.set()
        thread.join(timeout=10)


def test_samples_hold_the_queue_figures_and_read_back_by_range(
    hub: Hub, client: Client, engine: sa.Engine
) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as s:
        for uid in ("a", "b", "c"):
            jobs_repo.insert_job(new_job(uid, 1000), session=s)
        bindings_repo.admit([("a", "east")], session=s)
    queue_history.sample_queues(hub.ctx)
    (history,) = client.queue_history()
    assert history.name == "default"
    (sample,) = history.samples
    assert (sample.pending_jobs, sample.running_jobs) == (2, 1)
    assert dict(sample.allocated.quantities) == {"cpu": "1"}
    # A day of samples a minute apart: the range and the thinning keep actual samples.
    start = datetime(2026, 11, 1, tzinfo=UTC)
    day = [
        QueueSample("default", start + timedelta(minutes=i), {"cpu": i}, {"cpu": 100}, {}, {}, 0, 0, i / 100)
        for i in range(1440)
    ]
    with session_scope(sessions) as s:
        samples_repo.add_samples(day, session=s)
    (got,) = client.queue_history(
        "default", since=start + timedelta(hours=1), until=start + timedelta(hours=2)
    )
    assert [s.time.ToDatetime(tzinfo=UTC) for s in got.samples] == [d.time for d in day[60:120]]
    (thin,) = client.queue_history(since=start, until=start + timedelta(days=1), max_samples=5)
    assert [s.share for s in thin.samples] == [0.0, 3.6, 7.2, 10.79, 14.39]


def test_old_samples_are_pruned_in_batches(engine: sa.Engine, database_url: str) -> None:
    sessions = make_sessionmaker(engine)
    ctx = HubContext(HubSettings(database_url=database_url, queue_history_keep=3600.0), engine, sessions)
    now = ctx.now()
    old = [
        QueueSample("default", now - timedelta(hours=2, minutes=i), {}, {}, {}, {}, 0, 0, 0.0)
        for i in range(12)
    ]
    new = [QueueSample("default", now - timedelta(minutes=i), {}, {}, {}, {}, 0, 0, 0.0) for i in range(3)]
    with session_scope(sessions) as s:
        samples_repo.add_samples(old + new, session=s)
    with session_scope(sessions) as s:  # one batch deletes the oldest first
        assert samples_repo.prune(now - timedelta(hours=1), session=s, batch=5) == 5
    with engine.connect() as conn:
        oldest = conn.execute(sa.text("SELECT min(time) FROM queue_samples")).scalar_one()
    assert oldest == old[6].time
    assert queue_history.prune_queue_history(ctx, batch=5) == 7  # two more batches
    with engine.connect() as conn:
        left = sorted(conn.execute(sa.text("SELECT time FROM queue_samples")).scalars())
    assert left == sorted(s.time for s in new)
