"""Admissions whose Dispatched event was never written (a hub died between a cycle's two
transactions) get it from the next leader, once."""

from __future__ import annotations

import sqlalchemy as sa

from tests.integration.test_snapshot_reads import new_job
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import jobs as jobs_repo


def dispatched(engine: sa.Engine, uid: str) -> list[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT message FROM events WHERE job_uid = :u AND reason = 'Dispatched' ORDER BY id"),
            {"u": uid},
        )
        return [r[0] for r in rows]


def test_admissions_without_their_event_get_it_once(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        for uid in ("logged", "lost", "requeued", "waiting"):
            jobs_repo.insert_job(new_job(uid, 1000), session=session)
    with session_scope(sessions) as session:  # a whole cycle: admissions, then their events
        done = bindings_repo.admit([("logged", "c1")], session=session)
        bindings_repo.log_dispatched(done, session=session)
    with session_scope(sessions) as session:  # only the first transaction of a cycle
        bindings_repo.admit([("lost", "c2"), ("requeued", "c1")], session=session)
    with session_scope(sessions) as session:
        bindings_repo.requeue(["requeued"], session=session, reason="test")
    with session_scope(sessions) as session:
        assert bindings_repo.repair_dispatched(session=session) == 2
    assert dispatched(engine, "logged") == ["admitted to cluster c1 (generation 1)"]
    assert dispatched(engine, "lost") == ["admitted to cluster c2 (generation 1)"]
    assert dispatched(engine, "requeued") == ["admitted to cluster (re-queued since) (generation 1)"]
    assert dispatched(engine, "waiting") == []
    with session_scope(sessions) as session:
        assert bindings_repo.repair_dispatched(session=session) == 0
