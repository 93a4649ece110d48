"""Fair share over time on real Postgres: the leader stores every queue's decayed usage, and a
hub that becomes the leader afterwards continues from it (and shows it) instead of from zero."""

from __future__ import annotations

import math

import pytest
import sqlalchemy as sa

from tests.integration.polling import wait
from tests.integration.test_dispatch_failures import register_cluster
from tests.integration.test_snapshot_reads import new_job
from vglobal.admission.share.usage import LN2
from vglobal.client import Client
from vglobal.config import HubSettings
from vglobal.hub.context import HubContext
from vglobal.hub.dispatch.cycle import Dispatcher
from vglobal.hub.server import Hub
from vglobal.model.resources import ResourceVector
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import jobs as jobs_repo

pytestmark = pytest.mark.db

HALF_LIFE = 0.5  # seconds: the usage of a steady allocation settles within a few seconds
HELD = 4 * 1000  # four jobs of one cpu, in milli-cpu
STEADY = HELD * HALF_LIFE / LN2


def stored(engine: sa.Engine) -> tuple[float, float] | None:
    """(cpu usage, time) of queue default's stored row."""
    with engine.connect() as conn:
        row = conn.execute(sa.text("SELECT usage, at FROM queue_usage WHERE queue = 'default'")).first()
    return None if row is None else (float(row.usage.get("cpu", 0.0)), float(row.at))


def test_a_new_leader_continues_the_stored_usage(engine: sa.Engine, database_url: str) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        for uid in "abcd":
            jobs_repo.insert_job(new_job(uid, 1000), session=session)
    register_cluster(engine)
    settings = HubSettings(database_url=database_url, fair_share_half_life=HALF_LIFE)
    first = Dispatcher(HubContext(settings=settings, engine=engine, sessions=sessions))
    assert first.cycle().admitted == 4
    got = stored(engine)
    assert got is not None and got[0] == 0.0  # stored at its first cycle: nothing charged yet
    started = got[1]

    def settled() -> tuple[float, float] | None:
        first.cycle()
        now = stored(engine)
        return now if now is not None and now[1] >= started + 10 * HALF_LIFE else None

    # the leader stores every few seconds, not every cycle; by then 4 cpus for 10+ half-lives
    usage, at = wait(settled, timeout=30, what="a later store of the usage")
    assert usage == pytest.approx(STEADY, rel=0.01)
    first.close()

    # A fresh hub leads: its first cycle starts from the stored row (from scratch it would store 0)
    hub = Hub(HubSettings(listen="127.0.0.1:0", database_url=database_url, fair_share_half_life=HALF_LIFE))
    hub.start()
    try:
        resumed = wait(
            lambda: (s := stored(engine)) is not None and s[1] > at and s,
            timeout=30,
            what="the new leader's store",
        )
        assert resumed[0] == pytest.approx(STEADY, rel=0.01)  # the same 4 cpus still run
        with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as client:
            queue = client.get_queue("default")
            (listed,) = [q for q in client.list_queues() if q.name == "default"]
        assert queue.usage_share == listed.usage_share
        # deserved is the 4 cpus it asks for: its decayed allocation is 4 cpus, at its share
        assert queue.usage_share == pytest.approx(1.0, rel=0.02)
        shown = ResourceVector.from_quantities(queue.usage.quantities)["cpu"]  # cpu-seconds, milli
        assert math.isclose(shown, STEADY, rel_tol=0.02)
    finally:
        hub.shutdown()
