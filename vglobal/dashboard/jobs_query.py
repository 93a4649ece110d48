"""The /jobs page's state, read from and written back to the query string (so a link can be shared)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import urlencode

from google.protobuf.timestamp_pb2 import Timestamp
from starlette.datastructures import QueryParams

from vglobal.api.v1 import jobs_pb2
from vglobal.dashboard.inputs import BadInput, digits, timestamp

SORTS = ("name", "created", "phase", "queue", "cluster")
GROUPS = ("queue", "phase", "cluster", "namespace")
PAGE_SIZES = (25, 50, 100, 200)


class QueryError(BadInput):
    """A query-string value the page cannot use; the message names the field."""


def parse_time(name: str, text: str) -> Timestamp | None:
    """An ISO time (``2026-12-04T10:00``, UTC unless it says otherwise) as a Timestamp."""
    try:
        return timestamp(name, text)
    except BadInput as exc:
        raise QueryError(str(exc)) from None


def parse_labels(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise QueryError(f"label: {part!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


@dataclass(frozen=True)
class JobQuery:
    queue: str = ""
    namespace: str = ""
    phase: str = ""
    cluster: str = ""
    label: str = ""
    q: str = ""  # name substring
    by: str = ""  # submitted by
    since: str = ""  # submitted at or after (ISO time)
    until: str = ""  # submitted before (ISO time)
    sort: str = ""  # a key of SORTS, "-" first for descending
    group: str = ""
    size: int = 50
    page: str = ""  # the hub's page token

    @classmethod
    def of(cls, params: QueryParams) -> JobQuery:
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = params.get(f.name, "").strip()
            if f.name == "size":
                try:
                    size = digits("size", raw, most=4)
                except BadInput:
                    size = -1
                if size is not None and size not in PAGE_SIZES:
                    raise QueryError(f"size: one of {', '.join(map(str, PAGE_SIZES))}")
                values["size"] = size or 50
            else:
                values[f.name] = raw
        query = cls(**values)  # type: ignore[arg-type]
        if query.sort and query.sort.lstrip("-") not in SORTS:
            raise QueryError(f"sort: one of {', '.join(SORTS)} (with - first to reverse)")
        if query.group and query.group not in GROUPS:
            raise QueryError(f"group: one of {', '.join(GROUPS)}")
        parse_labels(query.label)
        parse_time("since", query.since)
        parse_time("until", query.until)
        return query

    def filters(self) -> dict[str, str]:
        """The filters only (what bulk cancel and the live stream match)."""
        keys = ("queue", "namespace", "phase", "cluster", "label", "q", "by", "since", "until")
        return {k: getattr(self, k) for k in keys if getattr(self, k)}

    def url(self, **changes: object) -> str:
        """This page's URL with ``changes`` (a change of filter or sort starts from the first page)."""
        if "page" not in changes:
            changes["page"] = ""
        query = replace(self, **changes)  # type: ignore[arg-type]
        items = [(f.name, getattr(query, f.name)) for f in fields(query)]
        kept = [(k, v) for k, v in items if v and not (k == "size" and v == 50)]
        return "/jobs" + ("?" + urlencode(kept) if kept else "")

    def _filter_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "queue": self.queue,
            "namespace": self.namespace,
            "phase": self.phase,
            "cluster": self.cluster,
            "labels": parse_labels(self.label),
            "name_contains": self.q,
            "submitted_by": self.by,
        }
        for key, text in (("created_after", self.since), ("created_before", self.until)):
            stamp = parse_time(key, text)
            if stamp is not None:
                out[key] = stamp
        return out

    def sort_order(self) -> tuple[str, bool]:
        """(the hub's sort key, descending). Grouped, the hub sorts by the group's key (its default
        order for namespace), so each group's rows are together under its header; the chosen sort
        then orders the rows within each group of a page (``in_groups``)."""
        if self.group:
            return ("" if self.group == "namespace" else self.group), False
        return self.sort.lstrip("-"), self.sort.startswith("-")

    def in_groups(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A page's rows (as the hub sent them, by group) with each group's rows in the chosen
        sort, namespace and name by default."""
        if not self.group:
            return rows
        key = self.sort.lstrip("-")

        def order(r: dict[str, Any]) -> tuple[Any, ...]:
            if key == "created":
                return (r["created"].timestamp() if r["created"] else 0.0, r["namespace"], r["name"])
            return (r[key] or "" if key and key != "name" else "", r["namespace"], r["name"])

        out: list[dict[str, Any]] = []
        for _, run in itertools.groupby(rows, key=lambda r: r[self.group] or ""):
            out += sorted(run, key=order, reverse=self.sort.startswith("-"))
        return out

    def request(self, *, page_token: str = "", page_size: int | None = None) -> jobs_pb2.ListJobsRequest:
        sort_by, descending = self.sort_order()
        return jobs_pb2.ListJobsRequest(
            **self._filter_fields(),
            page_size=page_size or self.size,
            page_token=page_token,
            sort_by=sort_by,
            descending=descending and bool(sort_by),
        )

    def count_request(self, group_by: list[str]) -> jobs_pb2.CountJobsRequest:
        return jobs_pb2.CountJobsRequest(**self._filter_fields(), group_by=group_by)

    def watch(self, from_revision: int | None) -> jobs_pb2.WatchJobsRequest:
        return jobs_pb2.WatchJobsRequest(
            queue=self.queue,
            namespace=self.namespace,
            labels=parse_labels(self.label),
            from_revision=from_revision,
        )
