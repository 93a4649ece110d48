"""/cronjobs and /jobflows: schedules with their next and last runs; each JobFlow's DAG by phase."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from vglobal.api.v1 import cronjobs_pb2, jobflows_pb2
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import gateway, page, render
from vglobal.sdk import rows


@page()
async def cronjobs_page(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    listed = await gw.call(gw.cronjobs.ListCronJobs, cronjobs_pb2.ListCronJobsRequest(), caller.token)
    crons = [rows.cronjob(c) for c in listed.cron_jobs]
    return render(request, caller, "cronjobs.html", {"cronjobs": crons})


@page()
async def jobflows_page(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    listed = await gw.call(gw.jobflows.ListJobFlows, jobflows_pb2.ListFlowObjectsRequest(), caller.token)
    return render(request, caller, "jobflows.html", {"jobflows": [rows.jobflow(f) for f in listed.job_flows]})
