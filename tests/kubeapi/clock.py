"""Timestamps in the API's two formats."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def rfc3339(at: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if at is None else at))


def micro_time(at: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339_in(seconds: float) -> str:
    return rfc3339(time.time() + seconds)
