"""Admissions whose Dispatched event was never written (a hub died between a cycle's two
transactions) get it from the next leader, once."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tests.integration.test_snapshot_reads import new_job
from vglobal.model.reasons import WaitKind
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
        bindings_repo.requeue(["requeued"], session=session, kind=WaitKind.Drained, reason="test")
    with session_scope(sessions) as session:
        assert bindings_repo.repair_dispatched(session=session) == 2
    assert dispatched(engine, "logged") == ["admitted to cluster c1 (generation 1)"]
    assert dispatched(engine, "lost") == ["admitted to cluster c2 (generation 1)"]
    assert dispatched(engine, "requeued") == ["admitted to cluster (re-queued since) (generation 1)"]
    assert dispatched(engine, "waiting") == []
    with session_scope(sessions) as session:
        assert bindings_repo.repair_dispatched(session=session) == 0


def test_a_failed_background_explanation_is_repaired_by_the_hub(
    engine: sa.Engine, database_url: str, monkeypatch: Any
) -> None:
    """The hub writes a cycle's explanation on a thread while the next cycle runs. When that write
    fails, the next cycle sees the error, and the admission's Dispatched event is written once, by
    the repair, while the job waits for no second admission."""
    from tests.integration.agent_driver import ScriptedAgent
    from tests.integration.polling import wait
    from tests.integration.test_dispatch_and_fencing import JOB
    from vglobal.client import Client
    from vglobal.config import HubSettings
    from vglobal.hub.server import Hub

    failed: list[str] = []
    log_dispatched = bindings_repo.log_dispatched

    def fails_once(admitted: Any, *, session: Any) -> None:
        if admitted and not failed:
            failed.append(admitted[0][0])
            raise sa.exc.OperationalError("INSERT INTO events", {}, Exception("connection lost"))
        log_dispatched(admitted, session=session)

    monkeypatch.setattr(bindings_repo, "log_dispatched", fails_once)
    hub = Hub(HubSettings(listen="127.0.0.1:0", database_url=database_url, dispatch_interval=0.1))
    hub.start()
    agent = ScriptedAgent(f"127.0.0.1:{hub.port}", "east")
    try:
        agent.connect()
        with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as client:
            client.submit_job(JOB % "j1")
            d = agent.expect("dispatch").dispatch
            # The explanation is written on a thread after the admission commits, so the agent may
            # hear of the job first: wait for the failure (it stays recorded), then check it.
            wait(lambda: failed, timeout=60, what="the failed explanation")
            assert failed == [d.job_uid]  # the explanation of the cycle that admitted it failed
            wait(lambda: dispatched(engine, d.job_uid))
            client.submit_job(JOB % "j2")  # cycles go on: the next one's explanation is written
            waiting = wait(lambda: (e := client.explain_job("j2")).reason.startswith("queue default:") and e)
            assert waiting.decision == "Waiting"
    finally:
        agent.close()
        hub.shutdown()
    assert dispatched(engine, d.job_uid) == ["admitted to cluster east (generation 1)"]
