"""Timestamps in the API's two formats."""

from __future__ import annotations

import time
from datetime import UTC, datetime

_last: list[tuple[int, str]] = [(-1, "")]


def rfc3339(at: float | None = None) -> str:
    """Seconds precision, as metav1.Time; the current second's text is reused (many writes share it)."""
    second = int(time.time() if at is None else at)
    if second != _last[0][0]:
        _last[0] = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _last[0][1]


def micro_time(at: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_in(seconds: float) -> str:
    return rfc3339(time.time() + seconds)
