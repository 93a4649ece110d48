"""/jobs: the table paged on the hub, its filters, sort and group-by, and bulk cancel."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import Response

from vglobal.api.v1 import jobs_pb2
from vglobal.dashboard import counts
from vglobal.dashboard.fmt import PHASES
from vglobal.dashboard.inputs import digits
from vglobal.dashboard.jobs_query import GROUPS, PAGE_SIZES, SORTS, JobQuery, QueryError
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import error, fragment, gateway, page, render
from vglobal.sdk import VGlobalError, rows

BULK_LIMIT = 10_000  # jobs one bulk cancel may touch; more must be narrowed by the filter


def _query(request: Request, caller: Caller) -> JobQuery | Response:
    try:
        return JobQuery.of(request.query_params)
    except QueryError as exc:
        return error(request, caller, 400, str(exc))


async def jobs_data(
    request: Request, caller: Caller, query: JobQuery, *, with_counts: bool
) -> dict[str, Any]:
    """The page of jobs; with ``with_counts`` also the totals and groups (a CountJobs over every
    matching job, which over millions takes longer than the page: the HTML page loads it apart)."""
    gw = gateway(request)
    listing = gw.call(gw.jobs.ListJobs, query.request(page_token=query.page), caller.token)
    if with_counts:
        resp, summary = await asyncio.gather(listing, counts.summary(gw, caller.token, query))
    else:
        resp, summary = await listing, None
    data: dict[str, Any] = {
        "query": query,
        "filters": query.filters(),
        "jobs": query.in_groups([rows.job(j) for j in resp.jobs]),
        "next_page": resp.next_page_token,
        "revision": resp.revision,
    }
    if summary is not None:
        data.update(counts_data(query, summary))
    if query.group:
        # Each group's header says how many jobs of the whole filter it holds (cached per caller
        # and query, so a live page does not recount on each change).
        known = summary or await counts.cached_summary(gw, caller.token, query, resp.revision)
        data["group_heads"] = {g["value"]: g for g in known.groups(query.group)}
    return data


def counts_data(query: JobQuery, summary: counts.Summary) -> dict[str, Any]:
    groups = summary.groups(query.group) if query.group else []
    return {"total": summary.total, "by_phase": summary.by_phase, "groups": groups}


def _context(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "sorts": SORTS, "group_keys": GROUPS, "sizes": PAGE_SIZES, "phases": PHASES}


@page()
async def jobs_page(request: Request, caller: Caller) -> Response:
    query = _query(request, caller)
    if isinstance(query, Response):
        return query
    if request.url.path.startswith("/api/"):
        data = await jobs_data(request, caller, query, with_counts=True)
        data.pop("query")
        return render(request, caller, "", data)
    data = await jobs_data(request, caller, query, with_counts=False)
    return render(request, caller, "jobs.html", _context(data))


@page()
async def jobs_results(request: Request, caller: Caller) -> Response:
    """The results part of /jobs alone, which the page fetches again when the live stream says so."""
    query = _query(request, caller)
    if isinstance(query, Response):
        return query
    data = await jobs_data(request, caller, query, with_counts=False)
    return fragment(request, "_jobs_results.html", {"caller": caller, **_context(data)})


@page()
async def jobs_counts(request: Request, caller: Caller) -> Response:
    """The totals, per-phase counts and groups of /jobs, loaded by the page after its rows."""
    query = _query(request, caller)
    if isinstance(query, Response):
        return query
    seen = digits("rev", request.query_params.get("rev", "")) or 0
    summary = await counts.cached_summary(gateway(request), caller.token, query, seen)
    context = {"caller": caller, "query": query, **counts_data(query, summary)}
    return fragment(request, "_jobs_counts.html", context)


async def _matching(request: Request, caller: Caller, query: JobQuery) -> list[jobs_pb2.Job]:
    """Every unfinished job the filter matches (at most BULK_LIMIT + 1, to tell there are more)."""
    gw = gateway(request)
    found: list[jobs_pb2.Job] = []
    token = ""
    while len(found) <= BULK_LIMIT:
        resp = await gw.call(gw.jobs.ListJobs, query.request(page_token=token, page_size=1000), caller.token)
        found.extend(j for j in resp.jobs if rows.job(j)["finished"] is False)
        token = resp.next_page_token
        if not token:
            break
    return found


@page(action=True)
async def bulk_cancel(request: Request, caller: Caller) -> Response:
    """Step one lists what would be cancelled and asks to confirm; step two cancels each job, the
    hub deciding each one against the caller's role."""
    form = await request.form()
    query = JobQuery.of(request.query_params)
    selected = [str(v) for v in form.getlist("sel")]
    everything = form.get("scope") == "matching"
    if everything:
        targets = [(j.namespace or "default", j.name) for j in await _matching(request, caller, query)]
        if len(targets) > BULK_LIMIT:
            return error(request, caller, 400, f"more than {BULK_LIMIT} jobs match: narrow the filter")
    else:
        targets = [tuple(s.split("/", 1)) for s in selected if "/" in s]  # type: ignore[misc]
    if not targets:
        return error(request, caller, 400, "sel: no job selected")
    if form.get("confirm") != "yes":
        return render(
            request,
            caller,
            "cancel_confirm.html",
            {"targets": targets, "everything": everything, "query": query, "selected": selected},
        )
    gw = gateway(request)
    results: list[dict[str, str]] = []
    for namespace, name in targets:
        try:
            await gw.call(gw.jobs.CancelJob, jobs_pb2.JobRef(namespace=namespace, name=name), caller.token)
            results.append({"job": f"{namespace}/{name}", "result": "cancelled"})
        except VGlobalError as exc:
            if exc.code == grpc.StatusCode.UNAUTHENTICATED:
                raise
            results.append({"job": f"{namespace}/{name}", "result": f"refused: {exc.message}"})
    status = 200 if all(r["result"] == "cancelled" for r in results) else 207
    if all(r["result"].startswith("refused") for r in results):
        status = 403
    return render(request, caller, "cancel_done.html", {"results": results, "query": query}, status)
