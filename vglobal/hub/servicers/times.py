"""A request's Timestamp fields as datetimes, or INVALID_ARGUMENT naming the field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from vglobal.hub.errors import InvalidArgument

# What a Timestamp may hold (google/protobuf/timestamp.proto): 0001-01-01 to 9999-12-31, nanos
# within one second. Anything else is refused before it can reach datetime or the database.
MIN_SECONDS = -62_135_596_800
MAX_SECONDS = 253_402_300_799


def time_field(request: Any, name: str) -> datetime | None:
    """``request.<name>`` as an aware datetime; None when the field is not set."""
    if not request.HasField(name):
        return None
    ts: Timestamp = getattr(request, name)
    if not MIN_SECONDS <= ts.seconds <= MAX_SECONDS or not 0 <= ts.nanos <= 999_999_999:
        raise InvalidArgument(
            f"{name}: not a valid timestamp (seconds {ts.seconds}, nanos {ts.nanos}; years 1 to 9999, "
            "nanos 0 to 999999999)"
        )
    return ts.ToDatetime(tzinfo=UTC)
