"""Cron schedules as Kubernetes reads them (5 fields, macros, ``@every``), in an IANA time zone.

The grammar is the one Kubernetes and Volcano accept (robfig/cron's standard parser): five fields,
each a list of ``*``, ``?``, ``N``, ``N-M``, with an optional ``/step``; month and weekday names;
``@yearly``/``@annually``/``@monthly``/``@weekly``/``@daily``/``@midnight``/``@hourly`` and
``@every <duration>``. croniter walks the wall clock; this module turns wall-clock times into
instants with one rule for daylight saving time:

- a local time that does not exist (the hour skipped in spring) is skipped;
- a local time that happens twice (the hour repeated in autumn) runs once, at its first
  occurrence, unless the schedule runs every hour (hour field ``*``): such a schedule counts
  elapsed hours and runs in both passes, so an hourly job keeps running hourly.

Every function is pure: times come in as arguments (timezone-aware), nothing reads a clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterBadDateError

from vglobal.model.duration import parse_duration
from vglobal.model.errors import Problems

__all__ = ["MACROS", "CronSchedule", "load_time_zone", "parse_schedule"]

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, lowest, highest, names) of the five fields, in order.
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
_PART = re.compile(r"^(?P<range>\*|\?|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/(?P<step>[0-9]+))?$")
# Volcano's check on each "/"-separated part of a zone name, before the zone database is asked.
_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
# The largest jump of a zone's UTC offset at one transition (real zones stay within 2 h).
_MAX_SHIFT = timedelta(hours=3)
_MINUTE = timedelta(minutes=1)
# Wall-clock matches tried for one answer; only skipped DST hours make it more than one or two.
_MAX_CANDIDATES = 10_000
# A schedule that never matches (31 February) is refused; croniter finds that out searching from here.
_PROBE = datetime(2001, 1, 1)


@dataclass(frozen=True)
class _Field:
    values: frozenset[int]
    star: bool  # "*" or "?" without a step: matters for how day of month and day of week combine


class _FieldError(ValueError):
    pass


def _value(text: str, name: str, low: int, high: int, names: dict[str, int]) -> int:
    if text in names:
        return names[text]
    if not text.isdigit():
        raise _FieldError(f'{name}: "{text}" is not a number' + (" or a name" if names else ""))
    value = int(text)
    if not low <= value <= high:
        raise _FieldError(f"{name}: {value} is outside {low}-{high}")
    return value


def _parse_field(text: str, index: int) -> _Field:
    name, low, high, names = _FIELDS[index]
    values: set[int] = set()
    star = False
    for part in text.lower().split(","):
        m = _PART.match(part)
        if m is None:
            raise _FieldError(f'{name}: "{part}" is not a value, range or step')
        step = int(m["step"]) if m["step"] is not None else 1
        if step < 1:
            raise _FieldError(f"{name}: the step in {part!r} must be at least 1")
        rng = m["range"]
        if rng in ("*", "?"):
            start, end = low, high
            star = star or step == 1
        elif "-" in rng:
            first, last = rng.split("-")
            start, end = _value(first, name, low, high, names), _value(last, name, low, high, names)
            if start > end:
                raise _FieldError(f"{name}: the range {rng!r} runs backwards")
        else:
            start = _value(rng, name, low, high, names)
            end = high if m["step"] is not None else start  # "N/step" means "N-max/step"
        values.update(range(start, end + 1, step))
    return _Field(frozenset(values), star)


def _expression(fields: list[_Field]) -> str:
    """A croniter expression with the day fields combined as Kubernetes combines them.

    Kubernetes matches a day when both day fields match if either is a wildcard, and when
    either matches otherwise; croniter does the same when a wildcard field is spelled "*", so
    only a wildcard becomes "*" there ("1-31" stays a list). The other fields are plain sets.
    """
    parts = []
    for i, f in enumerate(fields):
        _, low, high, _ = _FIELDS[i]
        full = len(f.values) == high - low + 1
        wildcard = f.star if i in (2, 4) else full
        parts.append("*" if wildcard else ",".join(str(v) for v in sorted(f.values)))
    return " ".join(parts)


def _utc(t: datetime) -> datetime:
    if t.tzinfo is None:
        raise ValueError("a schedule needs timezone-aware times")
    return t.astimezone(UTC)


def _wall(t: datetime, tz: ZoneInfo) -> datetime:
    return t.astimezone(tz).replace(tzinfo=None)


def _offset(t: datetime, tz: ZoneInfo) -> timedelta:
    return t.astimezone(tz).utcoffset() or timedelta(0)


@dataclass(frozen=True)
class CronSchedule:
    """A parsed schedule; ``next_after``/``latest_at_or_before`` walk it in absolute time."""

    text: str
    time_zone: str = "UTC"
    expression: str | None = None  # croniter's form; None for @every
    every: timedelta | None = None
    every_hour: bool = False

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)

    def _instants(self, wall: datetime) -> list[datetime]:
        """The instants a wall-clock time stands for, by the rule in the module docstring."""
        out: list[datetime] = []
        for fold in (0, 1):
            at = wall.replace(tzinfo=self.tz, fold=fold).astimezone(UTC)
            if _wall(at, self.tz) == wall and at not in out:
                out.append(at)
        return out if self.every_hour else out[:1]

    def _walk(self, start: datetime, *, backwards: bool = False) -> Iterator[datetime]:
        """Wall-clock matches after (or before) ``start``; a bounded number, so no loop is endless."""
        assert self.expression is not None
        it = croniter(self.expression, start)
        for _ in range(_MAX_CANDIDATES):
            yield it.get_prev(datetime) if backwards else it.get_next(datetime)
        raise ValueError(f'schedule "{self.text}" has no time in {self.time_zone} near {start}')

    def _steps(self, t: datetime, anchor: datetime | None) -> tuple[datetime, int]:
        """For ``@every``: the grid's start (``anchor`` or ``t``, to the second) and the steps to ``t``."""
        assert self.every is not None
        start = _utc(anchor or t).replace(microsecond=0)
        return start, (t - start) // self.every

    def next_after(self, t: datetime, *, anchor: datetime | None = None) -> datetime:
        """The first scheduled instant strictly after ``t`` (UTC).

        ``@every`` has no fixed grid: it steps from ``anchor`` (the creation or last scheduled
        time), or from ``t`` itself when none is given, as Kubernetes steps from its last time.
        """
        t = _utc(t)
        if self.every is not None:
            start, steps = self._steps(t, anchor)
            return start + self.every * max(steps + 1, 1)
        tz, wall = self.tz, _wall(t, self.tz)
        found: list[datetime] = []
        # Just before a repeated hour, its second pass lies ahead although its wall times are behind.
        back = max(_offset(t, tz) - _offset(t + _MAX_SHIFT, tz), timedelta(0))
        if back and self.every_hour:
            for c in self._walk(wall - back):
                if c > wall:
                    break
                found += [i for i in self._instants(c) if i > t]
        for c in self._walk(wall):
            after = [i for i in self._instants(c) if i > t]
            if after:
                return min(found + after)
        raise AssertionError("unreachable")  # pragma: no cover

    def latest_at_or_before(self, t: datetime, *, anchor: datetime | None = None) -> datetime | None:
        """The last scheduled instant at or before ``t`` (UTC).

        For ``@every``, the last step from ``anchor`` (None when there is none, or no anchor).
        """
        t = _utc(t)
        if self.every is not None:
            if anchor is None:
                return None
            start, steps = self._steps(t, anchor)
            return start + self.every * steps if steps >= 1 else None
        tz, wall = self.tz, _wall(t, self.tz)
        found: list[datetime] = []
        # Just after a repeated hour, the first pass of wall times ahead of ``wall`` is behind ``t``.
        ahead = max(_offset(t - _MAX_SHIFT, tz) - _offset(t, tz), timedelta(0))
        if ahead:
            for c in self._walk(wall):
                if c > wall + ahead:
                    break
                found += [i for i in self._instants(c) if i <= t]
        # Whole minutes only: the latest match at or before ``wall`` is the latest before the next minute.
        for c in self._walk(wall.replace(second=0, microsecond=0) + _MINUTE, backwards=True):
            before = [i for i in self._instants(c) if i <= t]
            if before:
                return max(found + before)
        raise AssertionError("unreachable")  # pragma: no cover

    def count_between(
        self, after: datetime, until: datetime, *, cap: int, anchor: datetime | None = None
    ) -> int:
        """How many scheduled instants lie in (after, until], counting no further than ``cap``."""
        after, until = _utc(after), _utc(until)
        if self.every is not None:
            start, _ = self._steps(after, anchor or after)
            done = max(self._steps(after, start)[1], 0)
            return min(cap, max(0, self._steps(until, start)[1] - done))
        n, t = 0, after
        while n < cap:
            t = self.next_after(t)
            if t > until:
                break
            n += 1
        return n


def load_time_zone(p: Problems, field: str, name: str | None) -> str | None:
    """An IANA zone name checked as Kubernetes checks it; None (and a problem) when unknown."""
    if name is None:
        return "UTC"
    if not name:
        p.add(field, "must be a time zone name such as Europe/Berlin, not empty")
        return None
    if name.lower() == "local":
        p.add(field, '"Local" is not allowed: name an IANA time zone such as Europe/Berlin')
        return None
    parts = name.split("/")
    if any(x in (".", "..") or x.startswith("-") or not _ZONE_PART.match(x) for x in parts):
        p.add(field, f'unknown time zone "{name}"')
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        p.add(field, f'unknown time zone "{name}" (use an IANA name such as Europe/Berlin)')
        return None
    return name


def _every(p: Problems, field: str, text: str, rest: str) -> CronSchedule | None:
    try:
        seconds = parse_duration(rest)
    except ValueError:
        p.add(field, f'invalid duration in "{text}" (use Go form like "@every 1h30m")')
        return None
    if seconds < 60:
        # A run is named after its minute: two runs in one minute would share a name.
        p.add(field, f'"{text}": the interval must be at least 1m')
        return None
    return CronSchedule(text=text, every=timedelta(seconds=int(seconds)))


def parse_schedule(p: Problems, field: str, text: str, time_zone: str = "UTC") -> CronSchedule | None:
    """Parse ``text``; each problem is added to ``p`` at ``field`` and None returned."""
    spec = text.strip()
    if not spec:
        p.add(field, "required")
        return None
    if "TZ" in spec:
        p.add(field, "TZ and CRON_TZ are not allowed in the schedule: set spec.timeZone instead")
        return None
    if spec.startswith("@every "):
        return _every(p, field, text, spec[len("@every ") :].strip())
    if spec.startswith("@"):
        if spec not in MACROS:
            known = ", ".join([*MACROS, "@every <duration>"])
            p.add(field, f'unknown schedule "{spec}" (known: {known})')
            return None
        spec = MACROS[spec]
    words = spec.split()
    if len(words) != 5:
        names = "minute hour day-of-month month day-of-week"
        p.add(field, f'"{text}" has {len(words)} fields; a schedule has 5: {names}')
        return None
    try:
        fields = [_parse_field(w, i) for i, w in enumerate(words)]
    except _FieldError as exc:
        p.add(field, f'invalid schedule "{text}": {exc}')
        return None
    expression = _expression(fields)
    try:
        croniter(expression, _PROBE).get_next(datetime)
    except CroniterBadDateError:
        p.add(field, f'"{text}" never matches a date')
        return None
    return CronSchedule(
        text=text, time_zone=time_zone, expression=expression, every_hour=len(fields[1].values) == 24
    )
