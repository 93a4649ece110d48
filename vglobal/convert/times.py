"""Times into protobuf Timestamps: an unset time stays unset."""

from __future__ import annotations

from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp


def set_time(field: Timestamp, dt: datetime | None) -> None:
    if dt is not None:
        field.FromDatetime(dt)
