"""Strict parsing of what a caller types into a URL or form: a bad value is a 400 naming the
parameter, never an exception from deep inside (``"²".isdigit()`` is true, ``int("²")`` raises)."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

MAX_DIGITS = 18  # every such number fits an int64
# protobuf's Timestamp range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
FIRST = datetime(1, 1, 1, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


class BadInput(ValueError):
    """A parameter the dashboard cannot use; the message names it."""


def digits(name: str, raw: str, *, most: int = MAX_DIGITS) -> int | None:
    """A whole number of ASCII digits (at most ``most`` of them); None for an empty value."""
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > most:
        raise BadInput(f"{name}: {raw[:40]!r} is not a whole number of at most {most} digits")
    return int(raw)


def timestamp(name: str, text: str) -> Timestamp | None:
    """An ISO time (``2026-12-04T10:00``, UTC unless it says otherwise) within Timestamp's range."""
    if not text:
        return None
    example = "an ISO time such as 2026-12-04T10:00"
    try:
        value = datetime.fromisoformat(text)
        value = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        raise BadInput(f"{name}: {text[:60]!r} is not {example} between years 1 and 9999") from None
    if not FIRST <= value <= LAST:
        raise BadInput(f"{name}: {text[:60]!r} is outside years 1 to 9999 in UTC")
    stamp = Timestamp()
    try:
        stamp.FromDatetime(value)
    except (ValueError, OverflowError):
        raise BadInput(f"{name}: {text[:60]!r} is outside what a timestamp holds") from None
    return stamp
