"""/cronjobs and /jobflows: schedules with their next and last runs; each JobFlow's DAG by phase."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from vglobal.api.v1 import cronjobs_pb2, jobflows_pb2
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import gateway, page, render
from vglobal.sdk.rows import ts


@page()
async def cronjobs_page(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    listed = await gw.call(gw.cronjobs.ListCronJobs, cronjobs_pb2.ListCronJobsRequest(), caller.token)
    crons = [
        {
            "name": c.name,
            "namespace": c.namespace,
            "schedule": c.schedule,
            "time_zone": c.time_zone or "UTC",
            "suspend": c.suspend,
            "queue": c.queue,
            "active": list(c.active),
            "concurrency_policy": c.concurrency_policy,
            "last_schedule": ts(c.last_schedule_time),
            "last_success": ts(c.last_successful_time),
            "next": ts(c.next_schedule_time),
        }
        for c in listed.cron_jobs
    ]
    return render(request, caller, "cronjobs.html", {"cronjobs": crons})


def flow_row(f: jobflows_pb2.JobFlow) -> dict[str, Any]:
    return {
        "name": f.name,
        "namespace": f.namespace,
        "phase": f.phase,
        "created": ts(f.created_at),
        "steps": [
            {
                "name": s.name,
                "job": s.job,
                "phase": s.phase,
                "depends_on": list(s.depends_on),
                "created": ts(s.created_at),
                "finished": ts(s.finished_at),
            }
            for s in f.steps
        ],
        "dag": [(s.name, s.phase, list(s.depends_on)) for s in f.steps],
    }


@page()
async def jobflows_page(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    listed = await gw.call(gw.jobflows.ListJobFlows, jobflows_pb2.ListFlowObjectsRequest(), caller.token)
    return render(request, caller, "jobflows.html", {"jobflows": [flow_row(f) for f in listed.job_flows]})
