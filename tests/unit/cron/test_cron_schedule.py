"""Cron schedules: the grammar Kubernetes accepts, and instants across daylight saving changes."""

from __future__ import annotations

import functools
import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from vglobal.model.cron_schedule import CronSchedule, load_time_zone, parse_schedule
from vglobal.model.errors import Problems

NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def schedule(text: str, zone: str = "UTC") -> CronSchedule:
    p = Problems()
    s = parse_schedule(p, "spec.schedule", text, zone)
    assert s is not None and not p, p.items
    return s


def problem(text: str) -> str:
    p = Problems()
    assert parse_schedule(p, "spec.schedule", text) is None
    [(field, message)] = p.items
    assert field == "spec.schedule"
    return message


def walk(s: CronSchedule, start: datetime, n: int) -> list[datetime]:
    out, t = [], start
    for _ in range(n):
        t = s.next_after(t)
        out.append(t)
    return out


def local(times: list[datetime], zone: ZoneInfo) -> list[str]:
    return [t.astimezone(zone).strftime("%m-%d %H:%M%z") for t in times]


# ---------------------------------------------------------------- grammar


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("*/15 * * * *", "0,15,30,45 * * * *"),
        ("0 9-17 * * mon-fri", "0 9,10,11,12,13,14,15,16,17 * * 1,2,3,4,5"),
        ("5/20 * * * *", "5,25,45 * * * *"),  # "N/step" runs from N to the end
        ("0 0 1 jan,JUL *", "0 0 1 1,7 *"),
        ("0 0 ? * SUN", "0 0 * * 0"),
        ("@hourly", "0 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        (
            "0-59 0-23 1-31 1-12 *",
            "* * 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31 * *",
        ),
    ],
)
def test_accepted_schedules_and_their_expression(text: str, expression: str) -> None:
    assert schedule(text).expression == expression


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "required"),
        ("*/5 * * * * *", "has 6 fields"),  # seconds, as robfig's standard parser refuses them
        ("* * * *", "has 4 fields"),
        ("60 * * * *", "minute: 60 is outside 0-59"),
        ("* 24 * * *", "hour: 24 is outside 0-23"),
        ("* * 0 * *", "day of month: 0 is outside 1-31"),
        ("* * * 13 *", "month: 13 is outside 1-12"),
        ("* * * * 7", "day of week: 7 is outside 0-6"),
        ("* * * * L", 'day of week: "l" is not a number or a name'),
        ("H * * * *", 'minute: "h" is not a number'),  # croniter's hashed values are refused
        ("R * * * *", 'minute: "r" is not a number'),  # and its random ones
        ("*/0 * * * *", "the step in '*/0' must be at least 1"),
        ("5-1 * * * *", "runs backwards"),
        ("0 0 31 2 *", "never matches a date"),
        ("@reboot", 'unknown schedule "@reboot"'),
        ("TZ=UTC 0 * * * *", "set spec.timeZone instead"),
        ("CRON_TZ=Europe/Berlin 0 * * * *", "TZ and CRON_TZ are not allowed"),
        ("@every 30s", "the interval must be at least 1m"),
        ("@every soon", "invalid duration"),
    ],
)
def test_refused_schedules_say_why(text: str, words: str) -> None:
    assert words in problem(text)


def test_day_fields_combine_as_in_kubernetes() -> None:
    # Both restricted: either matches (the 1st, or any Monday).
    either = walk(schedule("0 0 1 * mon"), datetime(2024, 4, 1, tzinfo=UTC), 4)
    assert [t.day for t in either] == [8, 15, 22, 29]
    # One a wildcard: both must match (Mondays only).
    mondays = walk(schedule("0 0 * * mon"), datetime(2024, 4, 1, tzinfo=UTC), 2)
    assert [t.day for t in mondays] == [8, 15]
    # A stepped wildcard is a restriction, not a wildcard (robfig clears its star for a step > 1).
    stepped = walk(schedule("0 0 */10 * mon"), datetime(2024, 4, 1, tzinfo=UTC), 4)
    assert [t.day for t in stepped] == [8, 11, 15, 21]


@pytest.mark.parametrize(
    ("name", "error"),
    [
        (None, None),
        ("Europe/Berlin", None),
        ("America/Argentina/Buenos_Aires", None),
        ("", "not empty"),
        ("Local", '"Local" is not allowed'),
        ("Mars/Olympus", 'unknown time zone "Mars/Olympus"'),
        ("../etc/passwd", 'unknown time zone "../etc/passwd"'),
        ("Europe/-Berlin", "unknown time zone"),
    ],
)
def test_time_zones(name: str | None, error: str | None) -> None:
    p = Problems()
    zone = load_time_zone(p, "spec.timeZone", name)
    if error is None:
        assert zone == (name or "UTC") and not p
    else:
        assert zone is None and p.items[0][0] == "spec.timeZone" and error in p.items[0][1]


# ---------------------------------------------------------------- daylight saving time


def test_spring_forward_skips_the_local_time_that_does_not_exist() -> None:
    # New York, 2024-03-10: 02:00 EST jumps to 03:00 EDT; 02:30 never happens that day.
    runs = walk(schedule("30 2 * * *", "America/New_York"), datetime(2024, 3, 8, 12, tzinfo=NY), 3)
    assert local(runs, NY) == ["03-09 02:30-0500", "03-11 02:30-0400", "03-12 02:30-0400"]
    # Berlin, 2024-03-31: 02:00 CET jumps to 03:00 CEST.
    runs = walk(schedule("30 2 * * *", "Europe/Berlin"), datetime(2024, 3, 30, 12, tzinfo=BERLIN), 2)
    assert local(runs, BERLIN) == ["04-01 02:30+0200", "04-02 02:30+0200"]


def test_fall_back_runs_a_repeated_local_time_once() -> None:
    # New York, 2024-11-03: 01:00-02:00 happens twice (EDT, then EST); the 01:30 job runs once.
    runs = walk(schedule("30 1 * * *", "America/New_York"), datetime(2024, 11, 2, 12, tzinfo=NY), 3)
    assert local(runs, NY) == ["11-03 01:30-0400", "11-04 01:30-0500", "11-05 01:30-0500"]
    runs = walk(schedule("30 2 * * *", "Europe/Berlin"), datetime(2024, 10, 26, 12, tzinfo=BERLIN), 2)
    assert local(runs, BERLIN) == ["10-27 02:30+0200", "10-28 02:30+0100"]
    # Every 20 minutes during 01:xx only: the first pass, not the repeat.
    runs = walk(schedule("*/20 1 * * *", "America/New_York"), datetime(2024, 11, 3, 0, tzinfo=NY), 4)
    assert local(runs, NY) == ["11-03 01:00-0400", "11-03 01:20-0400", "11-03 01:40-0400", "11-04 01:00-0500"]


def test_an_every_hour_schedule_keeps_its_pace_through_both_changes() -> None:
    hourly = schedule("0 * * * *", "America/New_York")
    spring = walk(hourly, datetime(2024, 3, 10, 0, 30, tzinfo=NY), 3)
    assert local(spring, NY) == ["03-10 01:00-0500", "03-10 03:00-0400", "03-10 04:00-0400"]
    assert spring[1] - spring[0] == timedelta(hours=1)
    fall = walk(hourly, datetime(2024, 11, 3, 0, 30, tzinfo=NY), 3)
    assert local(fall, NY) == ["11-03 01:00-0400", "11-03 01:00-0500", "11-03 02:00-0500"]
    assert {b - a for a, b in itertools.pairwise(fall)} == {timedelta(hours=1)}


def test_latest_at_or_before_mirrors_next_after() -> None:
    hourly = schedule("0 * * * *", "America/New_York")
    t = datetime(2024, 11, 3, 1, 30, tzinfo=NY).replace(fold=1)  # 01:30 EST, in the second pass
    assert local([hourly.latest_at_or_before(t)], NY) == ["11-03 01:00-0500"]  # type: ignore[list-item]
    once = schedule("30 1 * * *", "America/New_York")
    assert local([once.latest_at_or_before(t)], NY) == ["11-03 01:30-0400"]  # type: ignore[list-item]
    exact = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
    assert schedule("0 12 * * *").latest_at_or_before(exact) == exact


def test_every_steps_from_its_anchor() -> None:
    every = schedule("@every 1h30m")
    anchor = datetime(2024, 1, 1, 0, 10, 5, 123, tzinfo=UTC)
    assert every.next_after(anchor, anchor=anchor) == datetime(2024, 1, 1, 1, 40, 5, tzinfo=UTC)
    later = datetime(2024, 1, 1, 5, 0, tzinfo=UTC)
    assert every.latest_at_or_before(later, anchor=anchor) == datetime(2024, 1, 1, 4, 40, 5, tzinfo=UTC)
    assert every.next_after(later, anchor=anchor) == datetime(2024, 1, 1, 6, 10, 5, tzinfo=UTC)
    assert every.count_between(anchor, later, cap=100, anchor=anchor) == 3
    assert every.latest_at_or_before(anchor + timedelta(hours=1), anchor=anchor) is None


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        schedule("* * * * *").next_after(datetime(2024, 1, 1))


# ---------------------------------------------------------------- against a minute-by-minute oracle

# Each zone's changes in 2024 as instants (Lord Howe moves by half an hour; Kolkata and UTC never).
CHANGES = [
    ("America/New_York", datetime(2024, 3, 10, 7, tzinfo=UTC)),
    ("America/New_York", datetime(2024, 11, 3, 6, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2024, 3, 31, 1, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2024, 10, 27, 1, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2024, 4, 6, 15, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2024, 10, 5, 15, 30, tzinfo=UTC)),
    ("Asia/Kolkata", datetime(2024, 3, 31, 1, tzinfo=UTC)),
    ("UTC", datetime(2024, 10, 27, 1, tzinfo=UTC)),
]
EXPRESSIONS = ["*/7 * * * *", "30 1 * * *", "0,30 * * * *", "15 2 * * *", "*/20 1-3 * * *", "45 * * * *"]


@functools.cache
def oracle(zone: str, text: str, around: datetime) -> list[datetime]:
    """Every minute within 32 hours of ``around`` whose wall time matches, counting a repeated
    hour's second pass only for every-hour schedules: the rule written out the slow way."""
    s = schedule(text, zone)
    assert s.expression is not None
    start, end = around - timedelta(hours=32), around + timedelta(hours=32)
    # The matching wall-clock minutes of the window (a day's margin each side for the offsets).
    it = croniter(s.expression, (start - timedelta(days=1)).replace(tzinfo=None))
    walls: set[datetime] = set()
    while (c := it.get_next(datetime)) < (end + timedelta(days=1)).replace(tzinfo=None):
        walls.add(c)
    out, t = [], start
    while t < end:
        wall = t.astimezone(s.tz)
        second_pass = wall.fold == 1 and wall.replace(fold=0).utcoffset() != wall.utcoffset()
        if wall.replace(tzinfo=None) in walls and (s.every_hour or not second_pass):
            out.append(t)
        t += timedelta(minutes=1)
    return out


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(CHANGES), st.sampled_from(EXPRESSIONS), st.integers(-180, 180), st.integers(0, 59))
def test_next_and_latest_agree_with_the_oracle(
    change: tuple[str, datetime], text: str, minutes: int, seconds: int
) -> None:
    zone, around = change
    s = schedule(text, zone)
    t = around + timedelta(minutes=minutes, seconds=seconds)
    expected = oracle(zone, text, around)
    after = [x for x in expected if x > t]
    before = [x for x in expected if x <= t]
    assert s.next_after(t) == after[0]
    assert s.latest_at_or_before(t) == before[-1]


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: f"{c[0]}@{c[1]:%m-%d}")
def test_a_sweep_across_each_change_agrees_with_the_oracle(change: tuple[str, datetime]) -> None:
    zone, around = change
    for text in EXPRESSIONS:
        s = schedule(text, zone)
        expected = oracle(zone, text, around)
        for step in range(-36, 37):
            t = around + timedelta(minutes=5 * step, seconds=17)
            assert s.next_after(t) == next(x for x in expected if x > t), (text, t)
            assert s.latest_at_or_before(t) == [x for x in expected if x <= t][-1], (text, t)
