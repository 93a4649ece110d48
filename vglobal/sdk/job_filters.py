"""The SDK's keyword filters of a job list or count, as the hub's request messages (one place for
Client and AsyncClient)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from vglobal.api.v1 import jobs_pb2, queues_pb2

# ListJobsRequest's and CountJobsRequest's filters, by the messages' field names.
TEXT_FILTERS = ("queue", "namespace", "phase", "cluster", "name_contains", "submitted_by")
TIME_FILTERS = ("created_after", "created_before", "finished_after")

Filter = str | datetime | bool | None  # bool: only a list's "descending"


def _fill(req: Any, labels: Mapping[str, str] | None, filters: Mapping[str, Filter]) -> None:
    for key, value in filters.items():
        if value is None or value == "":
            continue
        if key in TEXT_FILTERS and isinstance(value, str):
            setattr(req, key, value)
        elif key in TIME_FILTERS and isinstance(value, datetime):
            getattr(req, key).FromDatetime(value)  # an aware datetime, or naive UTC
        else:
            wanted = "str" if key in TEXT_FILTERS else "datetime" if key in TIME_FILTERS else None
            if wanted is None:
                known = ", ".join(TEXT_FILTERS + TIME_FILTERS)
                raise TypeError(f"unknown job filter {key!r} (known: {known}, labels)")
            raise TypeError(f"job filter {key!r} takes a {wanted}, not {type(value).__name__}")
    req.labels.update(labels or {})


def list_request(
    *,
    page_size: int = 0,
    page_token: str = "",
    labels: Mapping[str, str] | None = None,
    query: Mapping[str, Filter],
) -> jobs_pb2.ListJobsRequest:
    """``query``: the filters, and sort_by (text) and descending (bool) as ListJobsRequest has them."""
    filters = dict(query)
    sort_by, descending = filters.pop("sort_by", ""), filters.pop("descending", False)
    if not isinstance(sort_by, str) or not isinstance(descending, bool):
        raise TypeError("sort_by takes a str and descending a bool")
    req = jobs_pb2.ListJobsRequest(
        page_size=page_size, page_token=page_token, sort_by=sort_by, descending=descending
    )
    _fill(req, labels, filters)
    return req


def count_request(
    group_by: Sequence[str], *, labels: Mapping[str, str] | None, filters: Mapping[str, Filter]
) -> jobs_pb2.CountJobsRequest:
    req = jobs_pb2.CountJobsRequest(group_by=list(group_by))
    _fill(req, labels, filters)
    return req


def history_request(
    name: str, *, since: datetime | None, until: datetime | None, max_samples: int
) -> queues_pb2.QueueHistoryRequest:
    req = queues_pb2.QueueHistoryRequest(name=name, max_samples=max_samples)
    if since is not None:
        req.since.FromDatetime(since)
    if until is not None:
        req.until.FromDatetime(until)
    return req
