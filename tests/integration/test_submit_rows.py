"""What a submit answers is the job as stored: the rows ``store`` builds from what it sent and what
the database filled in (RETURNING) equal the rows read back."""

from __future__ import annotations

import sqlalchemy as sa

from tests.integration.test_jobs_api import job
from vglobal.hub.submit import Submission, parse_one, store
from vglobal.model.job import Job
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import jobs as jobs_repo


def _parsed(name: str) -> Job:
    return parse_one(job(name), Job, max_bytes=1 << 20)


def test_stored_rows_equal_the_rows_read_back(engine: sa.Engine) -> None:
    sessions = make_sessionmaker(engine)
    items = [Submission(_parsed(f"j{i}"), f"r{i}", "alice") for i in range(3)]
    items.append(Submission(_parsed("no-request"), None, None))
    with session_scope(sessions) as session:
        stored = store(items, session=session)
        read = jobs_repo.by_uids([row.uid for row, _ in stored], session=session)
    assert [created for _, created in stored] == [True] * 4
    for row, _ in stored:
        assert row == read[row.uid]
    assert stored[0][0].tasks[1].replicas == 3  # the manifest's worker task
    # Submitted again under its request_id: the same job, as stored, not created.
    with session_scope(sessions) as session:
        ((again, created),) = store([Submission(_parsed("j0"), "r0", "alice")], session=session)
    assert not created and again == read[stored[0][0].uid]
