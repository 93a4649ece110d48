"""A CronJob every minute on the real clock, through hubs killed -9 in the middle of making its run
and right after: exactly one Job for the scheduled minute, made by whichever hub got to commit it.

It waits for the next minute to begin (up to a minute), so it is marked ``realtime``; it uses a
database of its own and runs alongside the other tests."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from tests.e2e.harness import System, wait_for
from tests.integration.workflow_driver import looked_at

pytestmark = [pytest.mark.e2e, pytest.mark.realtime]

CRON = """
apiVersion: batch.volcano.sh/v1alpha1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "*/1 * * * *"
  jobTemplate:
    spec:
      tasks:
      - name: t
        replicas: 1
        template: {spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}}
"""

# A backend blocked on a lock while it holds a new row of ``jobs``: a hub's look that has inserted
# the run's Job and waits to write its Submitted event, inside the transaction that makes the run.
MID_RUN = sa.text(
    """
    SELECT count(*) FROM pg_stat_activity a
    WHERE a.datname = current_database() AND a.wait_event_type = 'Lock'
      AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
                  AND l.relation = 'jobs'::regclass AND l.mode = 'RowExclusiveLock')
    """
)


def runs(conn: sa.Connection) -> list[str]:
    names = list(
        conn.execute(sa.text("SELECT name FROM jobs WHERE name LIKE 'tick-%' ORDER BY name")).scalars()
    )
    conn.rollback()  # the next read sees what is committed then
    return names


def half_made(conn: sa.Connection) -> bool:
    found = conn.execute(MID_RUN).scalar_one() == 1
    conn.rollback()  # pg_stat_activity is read once per transaction
    return found


def test_every_minute_one_job_through_hubs_killed_before_and_after_the_run_commits(
    system: System, engine: sa.Engine
) -> None:
    system.start_hub()
    path = system.tmp / "cron.yaml"
    path.write_text(CRON)
    system.cli("apply", "-f", str(path))

    with engine.connect() as holder, engine.connect() as conn:
        # Hold back every new event: the look that makes the minute's run stops half-way.
        holder.execute(sa.text("LOCK TABLE events IN SHARE MODE"))
        wait_for(lambda: half_made(conn), 75, "the run half made", system)
        system.kill("hub", signal.SIGKILL)  # before the run's transaction commits
        holder.rollback()
        assert runs(conn) == []  # what the killed hub had begun is gone

        system.start_hub(name="hub-2")
        deadline = time.monotonic() + 30
        while not (made := runs(conn)) and time.monotonic() < deadline:
            time.sleep(0.02)
        system.kill("hub-2", signal.SIGKILL)  # right after it committed the run
        assert len(made) == 1, system.logs()
        killed_at = datetime.now(UTC).timestamp()
        minute = int(made[0].removeprefix("tick-"))
        assert (
            minute * 60 <= killed_at < minute * 60 + 90
        )  # the minute just begun (or missed during the kill)

        system.start_hub(name="hub-3")
        wait_for(lambda: looked_at(engine, "tick") > killed_at, 30, "the third hub looked", system)
        assert runs(conn) == made  # nothing made twice, nothing lost
        status = conn.execute(sa.text("SELECT status FROM cron_jobs WHERE name = 'tick'")).scalar_one()
    with system.client() as c:
        cron = c.get_cron_job("tick")
        assert list(cron.active) == made
        assert cron.last_schedule_time.seconds == minute * 60, status
        assert [e.reason for e in cron.events].count("SuccessfulCreate") == 1
    assert "failed" not in system.log("hub-3")
