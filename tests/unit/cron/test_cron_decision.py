"""The cron decision driven by a fake clock: policies, history, suspension, missed runs, exactly once."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vglobal.model.cronjob import CronJob, parse_cron_job, run_name
from vglobal.model.workflow_status import CronStatus
from vglobal.workflows.cron_decision import (
    CancelRun,
    CreateRun,
    CronDecision,
    CronRun,
    DeleteRun,
    MissedRuns,
    SkipRun,
    decide_cron,
)

TEMPLATE: dict[str, Any] = {
    "spec": {
        "tasks": [
            {
                "name": "main",
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}},
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
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"schedule": schedule, "jobTemplate": copy.deepcopy(TEMPLATE), **spec},
        }
    )


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def name(minutes: float) -> str:
    return run_name("c", at(minutes))


def run(minutes: float, phase: str = "Running", finished: float | None = None) -> CronRun:
    done = at(finished) if finished is not None else None
    return CronRun(name=name(minutes), phase=phase, created=at(minutes) + timedelta(seconds=1), finished=done)


def decide(c: CronJob, status: CronStatus, runs: list[CronRun], now: float) -> CronDecision:
    return decide_cron(c, created=at(0), status=status, runs=runs, now=at(now))


def kinds(d: CronDecision) -> list[str]:
    return [type(a).__name__ for a in d.actions]


def test_allow_creates_each_run_named_by_its_time() -> None:
    c = cron()
    first = decide(c, CronStatus(), [], 10.5)
    [create] = first.actions
    assert isinstance(create, CreateRun)
    assert (create.name, create.scheduled_time, create.job.name) == (name(10), at(10), name(10))
    assert first.status == CronStatus(active=(name(10),), last_schedule_time=at(10))
    assert first.next_time == at(20)
    # Looking again before the next time does nothing; the next time runs beside the first.
    assert decide(c, first.status, [run(10)], 15).actions == ()
    second = decide(c, first.status, [run(10)], 20)
    assert [a.name for a in second.actions if isinstance(a, CreateRun)] == [name(20)]
    assert second.status.active == (name(10), name(20))


def test_forbid_holds_the_run_until_the_active_one_finishes() -> None:
    c = cron(concurrencyPolicy="Forbid")
    status = CronStatus(active=(name(10),), last_schedule_time=at(10))
    held = decide(c, status, [run(10)], 20)
    assert held.actions == (SkipRun(scheduled_time=at(20), active=(name(10),)),)
    assert held.status.last_schedule_time == at(10)  # still due
    # It finishes at 25: the 20:00 run starts late (no deadline), as in Kubernetes.
    later = decide(c, held.status, [run(10, "Completed", finished=25)], 25)
    assert [a.name for a in later.actions if isinstance(a, CreateRun)] == [name(20)]
    assert later.status.last_successful_time == at(25)


def test_forbid_with_a_deadline_gives_up_the_held_run() -> None:
    c = cron(concurrencyPolicy="Forbid", startingDeadlineSeconds=120)
    status = CronStatus(active=(name(10),), last_schedule_time=at(10))
    done = [run(10, "Completed", finished=25)]
    d = decide(c, status, done, 25)
    assert d.actions == (MissedRuns(count=1, latest=at(20)),)
    assert d.status.last_missed_time == at(20)
    # Reported once: the next look is quiet until 30:00, which then starts.
    assert decide(c, d.status, done, 26).actions == ()
    assert kinds(decide(c, d.status, done, 30)) == ["CreateRun"]


def test_replace_cancels_the_active_runs_and_starts_the_new_one() -> None:
    c = cron(concurrencyPolicy="Replace")
    status = CronStatus(active=(name(10),), last_schedule_time=at(10))
    d = decide(c, status, [run(10)], 20)
    assert d.actions[0] == CancelRun(name=name(10))
    assert isinstance(d.actions[1], CreateRun) and d.actions[1].name == name(20)
    assert d.status.active == (name(20),)


def test_history_limits_delete_the_oldest_finished_runs() -> None:
    c = cron(successfulJobsHistoryLimit=2, failedJobsHistoryLimit=1)
    runs = [
        run(10, "Completed", finished=11),
        run(20, "Failed", finished=21),
        run(30, "Completed", finished=31),
        run(40, "Terminated", finished=41),
        run(50, "Completed", finished=51),
        run(60, "Aborted", finished=61),
        run(70, "Running"),
    ]
    d = decide(c, CronStatus(last_schedule_time=at(70)), runs, 75)
    assert d.actions == (DeleteRun(name=name(10)), DeleteRun(name=name(20)), DeleteRun(name=name(40)))
    assert d.status.active == (name(70),) and d.status.last_successful_time == at(51)
    # A limit of 0 keeps none.
    zero = decide(cron(successfulJobsHistoryLimit=0), CronStatus(last_schedule_time=at(70)), runs[:1], 75)
    assert zero.actions == (DeleteRun(name=name(10)),)


def test_suspend_starts_nothing_and_resuming_starts_only_the_latest() -> None:
    status = CronStatus(last_schedule_time=at(10))
    paused = decide(cron(suspend=True), status, [run(10, "Completed", finished=12)], 45)
    assert paused.actions == () and paused.next_time is None
    assert paused.status.last_successful_time == at(12)
    resumed = decide(cron(), paused.status, [run(10, "Completed", finished=12)], 45)
    assert kinds(resumed) == ["MissedRuns", "CreateRun"]
    assert resumed.actions[0] == MissedRuns(count=2)
    assert "missed 2 scheduled runs" in resumed.actions[0].message  # type: ignore[union-attr]
    assert isinstance(resumed.actions[1], CreateRun) and resumed.actions[1].scheduled_time == at(40)


def test_a_run_made_before_the_status_was_saved_is_not_made_again() -> None:
    # A leader created the 20:00 run and stopped before recording it in the status.
    d = decide(cron(), CronStatus(active=(name(10),), last_schedule_time=at(10)), [run(10), run(20)], 21)
    assert d.actions == ()
    assert d.status.last_schedule_time == at(20) and d.status.active == (name(10), name(20))


def test_a_clock_that_jumps_back_creates_nothing() -> None:
    status = CronStatus(active=(name(40),), last_schedule_time=at(40))
    d = decide(cron(), status, [run(40)], 12)
    assert d.actions == () and d.next_time == at(50)


def test_many_missed_are_reported_once_with_the_warning() -> None:
    d = decide(cron(), CronStatus(), [], 3 * 24 * 60 + 1)
    missed = d.actions[0]
    assert isinstance(missed, MissedRuns) and missed.too_many and missed.count == 101
    assert "more than 100" in missed.message and "startingDeadlineSeconds" in missed.message


def test_status_as_volcano_writes_it() -> None:
    status = CronStatus(active=("c-1",), last_schedule_time=at(10), last_successful_time=at(5))
    assert status.to_volcano("ns") == {
        "active": [
            {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "namespace": "ns", "name": "c-1"}
        ],
        "lastScheduleTime": "2024-05-01T12:10:00Z",
        "lastSuccessfulTime": "2024-05-01T12:05:00Z",
    }
    assert CronStatus().to_volcano("ns") == {}


# ---------------------------------------------------------------- exactly once, whatever the clock does


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(["*/10 * * * *", "0,5 * * * *", "*/3 * * * *", "@every 7m", "30 1 * * *"]),
    st.sampled_from(["Allow", "Forbid", "Replace"]),
    st.sampled_from([None, 0, 90, 600]),
    st.lists(st.tuples(st.integers(-90, 120), st.booleans()), min_size=1, max_size=40),
)
def test_no_scheduled_time_is_created_twice(
    schedule: str, policy: str, deadline: int | None, steps: list[tuple[int, bool]]
) -> None:
    """Any sequence of clock moves (backwards too), runs finishing at random, decisions applied
    as the hub applies them: every run is a scheduled time, never created twice, never early."""
    spec: dict[str, Any] = {"concurrencyPolicy": policy, "timeZone": "America/New_York"}
    if deadline is not None:
        spec["startingDeadlineSeconds"] = deadline
    c = cron(schedule, **spec)
    created = datetime(2024, 11, 2, 23, 0, tzinfo=UTC)  # the New York autumn change is 06:00 UTC next day
    now, status, runs = created, CronStatus(), {}
    made: list[datetime] = []
    for minutes, finish in steps:
        now += timedelta(minutes=minutes)
        if finish:
            runs = {n: replace(r, phase="Completed", finished=now) for n, r in runs.items()}
        d = decide_cron(c, created=created, status=status, runs=list(runs.values()), now=now)
        for a in d.actions:
            if isinstance(a, CreateRun):
                assert a.scheduled_time <= now and a.scheduled_time > created
                assert a.name not in runs
                made.append(a.scheduled_time)
                runs[a.name] = CronRun(name=a.name, phase="Running", created=now)
            elif isinstance(a, CancelRun | DeleteRun):
                if isinstance(a, DeleteRun):
                    runs.pop(a.name)
                else:
                    runs[a.name] = replace(runs[a.name], phase="Aborted", finished=now)
        status = d.status
    assert len(made) == len(set(made))
    assert made == sorted(made)
    for t in made:  # each is one of the schedule's instants
        if c.schedule.every is not None:
            assert (t - created) % c.schedule.every == timedelta(0)
        else:
            assert c.schedule.latest_at_or_before(t) == t
