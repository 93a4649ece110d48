"""/: jobs by phase with completion rates, queue utilisation, cluster health and capacity, recent
failures and the jobs waiting longest."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from starlette.requests import Request
from starlette.responses import Response

from vglobal.api.v1 import jobs_pb2, queues_pb2
from vglobal.dashboard.fmt import PHASES, resources
from vglobal.dashboard.session import Caller
from vglobal.dashboard.views_clusters import clusters_data
from vglobal.dashboard.web import fragment, gateway, page, render
from vglobal.sdk import rows

SUCCESS = "Completed"
UNSUCCESSFUL = ("Failed", "Aborted", "Terminated")


def _ago(delta: timedelta) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(datetime.now(UTC) - delta)
    return stamp


def rate(resp: jobs_pb2.CountJobsResponse) -> dict[str, Any]:
    """Of the jobs that finished in the window: how many, and the share that completed."""
    done = {g.phase: int(g.count) for g in resp.groups}
    ok = done.get(SUCCESS, 0)
    finished = ok + sum(done.get(p, 0) for p in UNSUCCESSFUL)
    return {"finished": finished, "completed": ok, "rate": (ok / finished) if finished else None}


async def jobs_part(request: Request, caller: Caller) -> dict[str, Any]:
    """The job figures: counts over every job, so the page loads them after its first paint."""
    gw, token = gateway(request), caller.token
    counts = [
        jobs_pb2.CountJobsRequest(group_by=["phase"]),
        jobs_pb2.CountJobsRequest(group_by=["phase"], finished_after=_ago(timedelta(hours=1))),
        jobs_pb2.CountJobsRequest(group_by=["phase"], finished_after=_ago(timedelta(days=1))),
    ]
    day = _ago(timedelta(days=1))
    lists = [
        jobs_pb2.ListJobsRequest(
            phase="Failed", finished_after=day, sort_by="created", descending=True, page_size=5
        ),
        jobs_pb2.ListJobsRequest(phase="Pending", sort_by="created", page_size=5),
    ]
    # Five calls at once: the part takes as long as the slowest, not their sum.
    (phases, hour, last_day), (failed, waiting) = await asyncio.gather(
        asyncio.gather(*(gw.call(gw.jobs.CountJobs, r, token) for r in counts)),
        asyncio.gather(*(gw.call(gw.jobs.ListJobs, r, token) for r in lists)),
    )
    by_phase = {g.phase: int(g.count) for g in phases.groups}
    order = [p for p in PHASES if p in by_phase] + sorted(set(by_phase) - set(PHASES))
    return {
        "total": phases.total,
        "by_phase": [(p, by_phase[p]) for p in order],
        "hour": rate(hour),
        "day": rate(last_day),
        "failed": [rows.job(j) for j in failed.jobs],
        "waiting": [rows.job(j) for j in waiting.jobs],
    }


async def queues_part(request: Request, caller: Caller) -> dict[str, Any]:
    """Queues with their usage (the hub counts their jobs: slower than a page over millions)."""
    gw = gateway(request)
    queues = await gw.call(gw.queues.ListQueues, queues_pb2.ListQueuesRequest(), caller.token)
    queue_rows = [rows.queue(q) for q in queues.queues]
    for q in queue_rows:
        q["resources"] = resources(q["deserved"], q["allocated"])
    return {"queues": queue_rows}


@page()
async def overview_page(request: Request, caller: Caller) -> Response:
    if request.url.path.startswith("/api/"):
        parts = await asyncio.gather(
            clusters_data(request, caller), queues_part(request, caller), jobs_part(request, caller)
        )
        return render(request, caller, "", {k: v for part in parts for k, v in part.items()})
    return render(request, caller, "overview.html", await clusters_data(request, caller))


@page()
async def overview_jobs(request: Request, caller: Caller) -> Response:
    return fragment(request, "_overview_jobs.html", {"caller": caller, **await jobs_part(request, caller)})


@page()
async def overview_queues(request: Request, caller: Caller) -> Response:
    return fragment(
        request, "_overview_queues.html", {"caller": caller, **await queues_part(request, caller)}
    )
