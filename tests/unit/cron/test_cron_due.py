"""Which scheduled time is due: missed runs, deadlines, many misses, clocks that jump back."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from vglobal.model.cronjob import CronJob, parse_cron_job
from vglobal.workflows.cron_due import DueRuns, due_runs

TEMPLATE: dict[str, Any] = {
    "spec": {
        "tasks": [
            {
                "name": "main",
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
            }
        ]
    }
}
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def cron(schedule: str = "*/10 * * * *", **spec: Any) -> CronJob:
    return parse_cron_job(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {"schedule": schedule, "jobTemplate": copy.deepcopy(TEMPLATE), **spec},
        }
    )


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.mark.parametrize(
    ("spec", "since", "now", "expected"),
    [
        # Nothing scheduled yet since the cursor.
        ({}, at(0), at(9), DueRuns(next_time=at(10))),
        # Exactly on time, a little late, and on the cursor itself (already done).
        ({}, at(0), at(10), DueRuns(start=at(10), next_time=at(20))),
        ({}, at(0), at(14.5), DueRuns(start=at(10), next_time=at(20))),
        ({}, at(10), at(10), DueRuns(next_time=at(20))),
        # Downtime: only the latest runs, the three before it are missed.
        ({}, at(0), at(45), DueRuns(start=at(40), missed=3, next_time=at(50))),
        # Within the deadline it starts; past it, it is given up and counted with the others.
        ({"startingDeadlineSeconds": 600}, at(0), at(45), DueRuns(start=at(40), missed=3, next_time=at(50))),
        (
            {"startingDeadlineSeconds": 60},
            at(0),
            at(45),
            DueRuns(too_late=at(40), missed=4, next_time=at(50)),
        ),
        # Exactly the deadline late still starts (too late means more than the deadline).
        ({"startingDeadlineSeconds": 300}, at(0), at(45), DueRuns(start=at(40), missed=3, next_time=at(50))),
        ({"startingDeadlineSeconds": 0}, at(30), at(40), DueRuns(start=at(40), next_time=at(50))),
        (
            {"startingDeadlineSeconds": 0},
            at(30),
            at(40.01),
            DueRuns(too_late=at(40), missed=1, next_time=at(50)),
        ),
        # The clock went back behind the cursor: nothing new, and the next time is after the cursor.
        ({}, at(40), at(5), DueRuns(next_time=at(50))),
        ({}, at(40), at(39.99), DueRuns(next_time=at(50))),
    ],
)
def test_due(spec: dict[str, Any], since: datetime, now: datetime, expected: DueRuns) -> None:
    assert due_runs(cron(**spec), since=since, now=now) == expected


def test_many_missed_start_the_latest_and_warn() -> None:
    # Three days of a 10-minute schedule: 432 unmet; the latest starts, the count stops above 100.
    due = due_runs(cron(), since=at(0), now=at(3 * 24 * 60 + 5))
    assert due.start == at(3 * 24 * 60) and due.too_many_missed and due.missed == 101
    # With a deadline that keeps the window small there is no warning (as in Kubernetes).
    due = due_runs(cron(startingDeadlineSeconds=3600), since=at(0), now=at(3 * 24 * 60 + 5))
    assert due.start == at(3 * 24 * 60) and not due.too_many_missed and due.missed == 101
    # Exactly 100 in the window is not too many; 101 is.
    assert not due_runs(cron(), since=at(0), now=at(1000)).too_many_missed
    assert due_runs(cron(), since=at(0), now=at(1010)).too_many_missed


def test_every_keeps_its_grid_from_the_cursor() -> None:
    every = cron("@every 25m")
    since = at(0) + timedelta(seconds=7)
    assert due_runs(every, since=since, now=at(24)) == DueRuns(next_time=since + timedelta(minutes=25))
    due = due_runs(every, since=since, now=at(80))
    assert due.start == since + timedelta(minutes=75) and due.missed == 2
    assert due.next_time == since + timedelta(minutes=100)
    late = due_runs(cron("@every 25m", startingDeadlineSeconds=60), since=since, now=at(80))
    assert late.too_late == since + timedelta(minutes=75) and late.missed == 3


def test_time_zone_shifts_the_schedule() -> None:
    berlin = cron("0 9 * * *", timeZone="Europe/Berlin")  # 09:00 CEST is 07:00 UTC in May
    due = due_runs(berlin, since=datetime(2024, 5, 1, 0, tzinfo=UTC), now=datetime(2024, 5, 1, 8, tzinfo=UTC))
    assert due.start == datetime(2024, 5, 1, 7, tzinfo=UTC)
    assert due.next_time == datetime(2024, 5, 2, 7, tzinfo=UTC)


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        due_runs(cron(), since=datetime(2024, 1, 1), now=at(0))
