"""/jobs/{namespace}/{name}: one job's phases, dispatches, pods, why it waits, events, manifest."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from vglobal.api.v1 import jobs_pb2
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import error, fragment, gateway, page, render, wants_json
from vglobal.sdk import rows

VERBS = ("cancel", "delete")


def verb_of(request: Request) -> str:
    """The action a route was made for (app.actions: one route per verb, the verb last)."""
    return request.url.path.rsplit("/", 1)[1]


def _ref(request: Request) -> jobs_pb2.JobRef:
    return jobs_pb2.JobRef(namespace=request.path_params["namespace"], name=request.path_params["name"])


def _who(events: list[dict[str, Any]], *reasons: str) -> str:
    for e in reversed(events):
        if e["reason"] in reasons and e["principal"]:
            return str(e["principal"])
    return ""


async def job_data(request: Request, caller: Caller) -> dict[str, Any]:
    gw = gateway(request)
    ref = _ref(request)
    # The one-row list gives the revision the live stream resumes from.
    here = jobs_pb2.ListJobsRequest(namespace=ref.namespace, name_contains=ref.name, page_size=1)
    job, explain, dispatches, listed = await asyncio.gather(
        gw.call(gw.jobs.GetJob, ref, caller.token),
        gw.call(gw.jobs.ExplainJob, ref, caller.token),
        gw.call(gw.jobs.ListJobDispatches, ref, caller.token),
        gw.call(gw.jobs.ListJobs, here, caller.token),
    )
    events = [rows.event(e) for e in explain.events]
    data = rows.job(job)
    return {
        "job": data,
        "decision": explain.decision,
        "explanation": explain.reason,
        "placement": list(explain.placement),  # a waiting job's verdict per cluster
        "events": events,
        "submitted_by": data["submitted_by"] or _who(events, "Submitted", "Created"),
        "cancelled_by": _who(events, "Cancelled", "CancelRequested", "Cancel", "Deleted"),
        "dispatches": [rows.dispatch(d) for d in dispatches.dispatches],
        "manifest_yaml": rows.manifest_yaml(job.manifest),
        "revision": listed.revision,
    }


@page()
async def job_page(request: Request, caller: Caller) -> Response:
    return render(request, caller, "job.html", await job_data(request, caller))


@page()
async def job_summary(request: Request, caller: Caller) -> Response:
    return fragment(request, "_job_summary.html", {"caller": caller, **await job_data(request, caller)})


@page(action=True)
async def job_action(request: Request, caller: Caller) -> Response:
    """Cancel or delete, as the caller; the hub refuses what the caller's role may not do."""
    gw = gateway(request)
    ref = _ref(request)
    verb = verb_of(request)
    if verb == "cancel":
        job = await gw.call(gw.jobs.CancelJob, ref, caller.token)
        result: dict[str, Any] = {"job": rows.job(job)}
        target = f"/jobs/{ref.namespace}/{ref.name}"
    elif verb == "delete":
        await gw.call(gw.jobs.DeleteJob, ref, caller.token)
        result, target = {"deleted": f"{ref.namespace}/{ref.name}"}, "/jobs"
    else:
        return error(request, caller, 404, f"no action {verb!r} on jobs")
    if wants_json(request):
        return render(request, caller, "", result)
    return RedirectResponse(target, 303)
