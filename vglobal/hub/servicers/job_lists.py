"""ListJobs' and CountJobs' requests as store filters, and the page tokens of a sorted list."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from vglobal.api.v1 import jobs_pb2
from vglobal.hub.errors import InvalidArgument
from vglobal.hub.servicers.times import time_field
from vglobal.model.records import JobRow
from vglobal.store.repo.job_queries import GROUP_KEYS, SORT_KEYS, JobFilter, Page

MAX_PAGE = 5000


def job_filter(
    request: jobs_pb2.ListJobsRequest | jobs_pb2.CountJobsRequest, queues: list[str] | None
) -> JobFilter:
    """The filters both requests share, by the same field names."""
    f = JobFilter(
        queue=request.queue,
        namespace=request.namespace,
        phase=request.phase,
        cluster=request.cluster,
        labels=dict(request.labels),
        name_contains=request.name_contains,
        submitted_by=request.submitted_by,
        created_after=time_field(request, "created_after"),
        created_before=time_field(request, "created_before"),
        finished_after=time_field(request, "finished_after"),
        queues=queues,
    )
    if f.created_after and f.created_before and f.created_before <= f.created_after:
        raise InvalidArgument("created_before: must be later than created_after")
    return f


def group_keys(request: jobs_pb2.CountJobsRequest) -> list[str]:
    keys = list(request.group_by)
    for i, key in enumerate(keys):
        if key not in GROUP_KEYS:
            raise InvalidArgument(f"group_by[{i}]: {key!r} is not one of {', '.join(GROUP_KEYS)}")
        if key in keys[:i]:
            raise InvalidArgument(f"group_by[{i}]: {key!r} is named twice")
    return keys


def page_size(request: jobs_pb2.ListJobsRequest) -> int:
    if request.page_size < 0:
        raise InvalidArgument(f"page_size: must be between 0 (the default, 500) and {MAX_PAGE}")
    return min(request.page_size or 500, MAX_PAGE)


def _encode(key: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def _not_ours() -> InvalidArgument:
    return InvalidArgument("page_token: not a token this hub gave out (pass next_page_token as it came)")


def page_of(request: jobs_pb2.ListJobsRequest) -> Page:
    """Where the requested page starts. A token is for one sort order: the default one's is
    [namespace, name]; a sort key's [sort_by, descending, value, uid]."""
    sort_by = request.sort_by
    if sort_by and sort_by not in SORT_KEYS:
        raise InvalidArgument(f"sort_by: {sort_by!r} is not one of {', '.join(SORT_KEYS)} (or empty)")
    token = request.page_token
    if not token:
        return Page(sort_by, request.descending)
    try:
        key = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError):
        raise _not_ours() from None
    if not isinstance(key, list):
        raise _not_ours()
    if len(key) == 2 and all(isinstance(k, str) for k in key):
        if sort_by or request.descending:
            raise InvalidArgument("page_token: given for another sort order than sort_by/descending")
        return Page("", False, (key[0], key[1]))
    if len(key) != 4 or not isinstance(key[2], str) or not isinstance(key[3], str):
        raise _not_ours()
    if key[0] != sort_by or key[1] is not request.descending:
        raise InvalidArgument("page_token: given for another sort order than sort_by/descending")
    value: Any = key[2]
    if sort_by == "created":
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise _not_ours() from None
    return Page(sort_by, request.descending, (value, key[3]))


def next_token(page: Page, last: JobRow) -> str:
    """The token of the page after ``last``, the last job of this one."""
    if not page.sort_by:
        return _encode([last.namespace, last.name])
    value: Any = {
        "name": last.name,
        "created": last.created_at.isoformat(),
        "phase": last.phase,
        "queue": last.queue,
        "cluster": last.cluster or "",
    }[page.sort_by]
    return _encode([page.sort_by, page.descending, value, last.uid])
