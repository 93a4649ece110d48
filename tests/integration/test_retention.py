"""History retention: jobs finished longer ago than --finished-job-ttl go, with their bindings and
events, in batches; unfinished jobs and recently finished ones stay."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.integration.test_snapshot_reads import new_job
from vglobal.config import HubSettings
from vglobal.hub import retention
from vglobal.hub.context import HubContext
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import events as events_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo.events import NewEvent


def seed(engine: sa.Engine, phases: dict[str, tuple[str, float]]) -> None:
    """Jobs whose bindings are in the given phases, finished that many seconds ago (finished ones)."""
    with session_scope(make_sessionmaker(engine)) as session:
        for uid, (phase, ago) in phases.items():
            jobs_repo.insert_job(new_job(uid, 1000), session=session)
            events_repo.add_events([NewEvent("Submitted", "x", job_uid=uid)], session=session)
            session.execute(
                sa.text(
                    "UPDATE resource_bindings SET phase = :p, "
                    "finished_at = CASE WHEN :p IN ('Succeeded', 'Failed', 'Aborted') "
                    "  THEN now() - make_interval(secs => :ago) END WHERE job_uid = :u"
                ),
                {"p": phase, "u": uid, "ago": ago},
            )


def left(engine: sa.Engine) -> tuple[set[str], int, int]:
    with engine.connect() as conn:
        uids = {r[0] for r in conn.execute(sa.text("SELECT uid FROM jobs"))}
        bindings = conn.execute(sa.text("SELECT count(*) FROM resource_bindings")).scalar_one()
        events = conn.execute(sa.text("SELECT count(*) FROM events WHERE job_uid IS NOT NULL")).scalar_one()
    return uids, bindings, events


def test_old_finished_jobs_go_in_batches_and_the_rest_stays(
    engine: sa.Engine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = 86400.0
    old = {f"old-{p}-{i}": (p, 8 * day) for p in ("Succeeded", "Failed", "Aborted") for i in range(5)}
    kept = {
        "new-done": ("Succeeded", 3600.0),
        "waiting": ("Suspended", 0.0),
        "running": ("Running", 0.0),
        "dispatched": ("Dispatched", 0.0),
    }
    seed(engine, {**old, **kept})
    ctx = HubContext(
        HubSettings(database_url=database_url, finished_job_ttl=7 * day),
        engine,
        make_sessionmaker(engine),
    )
    monkeypatch.setattr(retention, "BATCH", 4)
    assert retention.remove_old_jobs(ctx) == 15
    assert left(engine) == (set(kept), 4, 4)
    assert retention.remove_old_jobs(ctx) == 0
