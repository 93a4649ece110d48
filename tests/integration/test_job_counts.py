"""The counts table (migration 0011) against a count of every row, after jobs went through a real
hub: submitted, dispatched, run, finished, failed, cancelled, left waiting, deleted, and removed
by retention; then folded by the leader's loop."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import combinations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from tests.integration.polling import wait
from tests.integration.test_auth_api import job, queue
from tests.integration.workflow_driver import Cluster
from vglobal.client import Client
from vglobal.hub.server import Hub
from vglobal.store.engine import make_engine
from vglobal.store.repo import job_counts
from vglobal.store.repo import retention as retention_repo
from vglobal.store.repo.job_queries import GROUP_KEYS, JobFilter, count_statement, grouped_rows

FIELDS = list(GROUP_KEYS)


def filters() -> list[JobFilter]:
    now = datetime.now(UTC)
    return [
        JobFilter(),
        JobFilter(queue="team-a"),
        JobFilter(phase="Running"),
        JobFilter(phase="Failed", queue="team-a"),
        JobFilter(phase="Suspended"),
        JobFilter(phase="Completed"),
        JobFilter(cluster="east", namespace="default"),
        JobFilter(queues=["default"]),
        JobFilter(finished_after=now - timedelta(minutes=1)),
        JobFilter(finished_after=now - timedelta(hours=3)),
        JobFilter(finished_after=now + timedelta(hours=1)),
    ]


def assert_counts_match(session: Session) -> None:
    for f in filters():
        for width in range(3):
            for group_by in combinations(FIELDS, width):
                kept = job_counts.count_jobs(f, group_by, session=session)
                counted = grouped_rows(count_statement(f, group_by), width, session=session)
                assert kept == counted, (f, group_by)


def test_kept_counts_equal_a_count_of_every_row(hub: Hub, database_url: str) -> None:
    engine = make_engine(database_url, pool_size=2)
    with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as c, Cluster(hub) as east:
        c.apply_queue(queue("team-a"))
        for i in range(6):
            c.submit_job(job(f"j{i}", "team-a" if i % 2 else "default"))
        c.submit_job(job("huge", "team-a").replace('"1"', '"100000"'))  # waits: fits nowhere
        for i in range(6):
            east.dispatched(f"j{i}")
        east.finish("j0")
        east.finish("j1")
        east.finish("j2", "Failed")
        c.cancel_job("j3")

        def phases() -> dict[str, str]:
            return {j.name: j.phase for j in c.list_jobs()}

        wait(
            lambda: (
                {k: phases()[k] for k in ("j0", "j1", "j2", "j3", "j4")}
                == {"j0": "Completed", "j1": "Completed", "j2": "Failed", "j3": "Aborted", "j4": "Running"}
            ),
            timeout=30.0,
            what="the reported phases",
        )
        c.delete_job("j0")
        with Session(engine) as session:
            assert_counts_match(session)
        with Session(engine) as session, session.begin():
            assert retention_repo.delete_finished_before(0, limit=10, session=session) == 3
        with Session(engine) as session:
            assert_counts_match(session)
        with Session(engine) as session, session.begin():
            job_counts.compact(session=session)
        with Session(engine) as session:
            assert_counts_match(session)
            keys = session.execute(
                sa.text(
                    "SELECT count(*), count(DISTINCT (queue, namespace, phase, binding_phase, cluster, "
                    "finished_hour)) FROM job_counts"
                )
            ).one()
            assert keys[0] == keys[1] > 0  # one row per key once folded
        with Session(engine) as session, session.begin():
            job_counts.rebuild(session=session)
        with Session(engine) as session:
            assert_counts_match(session)
    engine.dispose()
