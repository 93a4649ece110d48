"""A dispatch cycle that fails keeps what the dispatcher knows of every job its failed transaction
could not have touched, and reads again (or writes again) only the rest. Postgres itself refuses
the writes here: a trigger raises for one job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from tests.integration.test_snapshot_reads import new_job, summary
from vglobal.config import HubSettings
from vglobal.hub.context import HubContext
from vglobal.hub.dispatch.cycle import Dispatcher
from vglobal.hub.dispatch.explain import ExplanationFailed
from vglobal.hub.dispatch.snapshot import SnapshotReader
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import live as live_repo

JOBS = ["a", "b", "c", "d"]
NODES: list[dict[str, Any]] = [{"name": "n0", "allocatable": {"cpu": 64000, "memory": 2**38, "pods": 110}}]


def refuse(engine: sa.Engine, when: str) -> None:
    """Postgres raises on every update of a binding for which ``when`` holds."""
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF {when} THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$"
            )
        )
        conn.execute(
            sa.text(
                "CREATE TRIGGER refuse BEFORE UPDATE ON resource_bindings FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        )


def allow(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TRIGGER refuse ON resource_bindings"))
        conn.execute(sa.text("DROP FUNCTION refuse()"))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[Any]]]:
    """The jobs whose bindings the dispatcher reads: all of them (a full read), those written
    since its last read, those it asks for by key."""
    seen: dict[str, list[Any]] = {"full": [], "changed": [], "jobs": []}
    full, changed, of_jobs = live_repo.live, live_repo.changed_since, live_repo.of_jobs

    def counted_full(*, session: Session) -> list[live_repo.LiveBinding]:
        seen["full"].append(1)
        return full(session=session)

    def counted_changed(horizon: int, **kw: Any) -> tuple[list[live_repo.LiveBinding], int]:
        rows, count = changed(horizon, **kw)
        seen["changed"].append(sorted(b.job_uid for b in rows))
        return rows, count

    def counted_of_jobs(uids: Any, *, session: Session) -> list[live_repo.LiveBinding]:
        seen["jobs"].append(sorted(uids))
        return of_jobs(uids, session=session)

    monkeypatch.setattr(live_repo, "live", counted_full)
    monkeypatch.setattr(live_repo, "changed_since", counted_changed)
    monkeypatch.setattr(live_repo, "of_jobs", counted_of_jobs)
    yield seen


def waiting_dispatcher(engine: sa.Engine, *, background: bool) -> Dispatcher:
    """Four jobs that wait for a cluster, and a dispatcher that has run one cycle over them."""
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        for uid in JOBS:
            jobs_repo.insert_job(new_job(uid, 1000), session=session)
    ctx = HubContext(settings=HubSettings(database_url="unused"), engine=engine, sessions=sessions)
    dispatcher = Dispatcher(ctx, background=background)
    assert dispatcher.cycle().admitted == 0
    return dispatcher


def register_cluster(engine: sa.Engine) -> None:
    with session_scope(make_sessionmaker(engine)) as session:
        clusters_repo.register(
            "c1", session=session, labels={}, nodes=NODES, free={"n0": NODES[0]["allocatable"]}
        )


def fresh_snapshot(engine: sa.Engine) -> dict[str, Any]:
    with session_scope(make_sessionmaker(engine)) as session:
        return summary(SnapshotReader().read(HubSettings(database_url="unused"), session=session))


def test_failed_admissions_are_read_again_and_nothing_else_is(engine: sa.Engine, reads: Any) -> None:
    dispatcher = waiting_dispatcher(engine, background=False)
    kept = dict(dispatcher.reader.jobs.entries)
    register_cluster(engine)
    refuse(engine, "NEW.phase = 'Dispatched' AND NEW.job_uid = 'c'")
    with pytest.raises(psycopg.Error, match="refused by the test"):
        dispatcher.cycle()  # admits all four in one statement: rolled back
    jobs = dispatcher.reader.jobs
    assert jobs.suspect == set(JOBS)
    assert all(jobs.entries[uid] is kept[uid] for uid in JOBS)  # kept as they were
    allow(engine)
    del reads["changed"][:], reads["jobs"][:]
    assert dispatcher.cycle().admitted == 4
    assert reads["full"] == [1]  # the first cycle's only
    # The suspects are read again: by key, unless the read of changes found them anyway (a
    # transaction open elsewhere on the server holds the horizon back).
    (changed,), (by_key,) = reads["changed"], reads["jobs"]
    assert set(by_key) == set(JOBS) - set(changed)
    assert sorted(jobs.running) == JOBS and not jobs.pending and not jobs.suspect
    with session_scope(dispatcher.ctx.sessions) as session:
        assert summary(dispatcher.reader.read(dispatcher.ctx.settings, session=session)) == fresh_snapshot(
            engine
        )
    dispatcher.close()


def test_reasons_whose_write_failed_are_written_again(engine: sa.Engine, reads: Any) -> None:
    dispatcher = waiting_dispatcher(engine, background=True)
    dispatcher.drain()  # the first cycle's reasons are written
    with engine.connect() as conn:
        first = dict(conn.execute(sa.text("SELECT job_uid, reason_kind FROM resource_bindings")).all())
    assert set(first) == set(JOBS) and all(first.values())
    register_cluster(engine)  # too small for all four: the last waits with another reason
    with engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE clusters SET free = CAST(:f AS jsonb)"),
            {"f": '{"n0": {"cpu": 3000, "pods": 110}}'},
        )
    refuse(engine, "NEW.phase = 'Suspended' AND NEW.reason_kind IS DISTINCT FROM OLD.reason_kind")
    assert dispatcher.cycle().admitted == 3  # its explanation is written in the background: it fails
    (waiting,) = dispatcher.reader.jobs.pending
    assert dispatcher.reader.jobs.reason(waiting) is not None  # handed to the writer
    with pytest.raises(ExplanationFailed) as failed:
        dispatcher.cycle()  # takes the failed explanation in
    assert failed.value.uids == [waiting]
    assert dispatcher.reader.jobs.reason(waiting) is None  # to be written again
    allow(engine)
    dispatcher.cycle()
    dispatcher.close()
    with engine.connect() as conn:
        kind = conn.execute(
            sa.text("SELECT reason_kind FROM resource_bindings WHERE job_uid = :u"), {"u": waiting}
        ).scalar_one()
    assert kind not in ("", first[waiting])
    assert reads["full"] == [1]
