"""/hyperjobs and /hyperjobs/{namespace}/{name}: HyperJobs as the hub reads them from their
children (each child's cluster, phase, pods and why it waits, the children's events), with cancel
and delete acting on every child at once."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from vglobal.api.v1 import hyperjobs_pb2, jobs_pb2
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import error, gateway, page, render, wants_json
from vglobal.sdk import rows

VERBS = ("cancel", "delete")
# Children whose events the page reads (one ExplainJob each); the table lists every child.
EVENTS_OF = 64
# A child's reason is shown while it waits, or is admitted and waits for its victims' eviction.
WAITING = ("Suspended", "Dispatched", "Bound")


def child_row(k: hyperjobs_pb2.HyperJobChild) -> dict[str, Any]:
    return {
        "name": k.name,
        "replicated_job": k.replicated_job,
        "index": k.index,
        "cluster": k.cluster,
        "phase": k.phase,
        "binding_phase": k.binding_phase,
        "generation": k.generation,
        "pending": k.pending,
        "running": k.running,
        "succeeded": k.succeeded,
        "failed": k.failed,
        "why": k.reason if k.reason and k.binding_phase in WAITING else "",
    }


def hyperjob_row(h: hyperjobs_pb2.HyperJob) -> dict[str, Any]:
    children = [child_row(k) for k in h.children]
    return {
        "name": h.name,
        "namespace": h.namespace or "default",
        "queue": h.queue,
        "phase": h.phase,
        "min_available": h.min_available,
        "failure_policy": h.failure_policy,
        "running_children": h.running_children,
        "waiting": h.waiting_reason,
        "children": children,
        "clusters": sorted({k["cluster"] for k in children if k["cluster"]}),
        "running_pods": sum(k["running"] for k in children),
        "finished": h.phase in ("Completed", "Failed", "Aborted"),
    }


def _ref(request: Request) -> hyperjobs_pb2.HyperJobRef:
    return hyperjobs_pb2.HyperJobRef(
        namespace=request.path_params["namespace"], name=request.path_params["name"]
    )


@page()
async def hyperjobs_page(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    namespace = request.query_params.get("namespace", "").strip()
    listed = await gw.call(
        gw.hyperjobs.ListHyperJobs, hyperjobs_pb2.ListHyperJobsRequest(namespace=namespace), caller.token
    )
    data = {"hyperjobs": [hyperjob_row(h) for h in listed.hyperjobs], "namespace": namespace}
    return render(request, caller, "hyperjobs.html", data)


@page()
async def hyperjob_page(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    ref = _ref(request)
    h = hyperjob_row(await gw.call(gw.hyperjobs.GetHyperJob, ref, caller.token))
    read = h["children"][:EVENTS_OF]
    refs = [jobs_pb2.JobRef(namespace=ref.namespace, name=k["name"]) for k in read]
    explained = await asyncio.gather(*(gw.call(gw.jobs.ExplainJob, r, caller.token) for r in refs))
    # In time order, the hub's event order breaking ties (as `describe hyperjob` prints them).
    pairs = zip(read, explained, strict=True)
    told = sorted(
        ((e.time.ToDatetime(), e.id, k["name"], e) for k, x in pairs for e in x.events), key=lambda t: t[:3]
    )
    events = [{**rows.event(e), "child": child} for _, _, child, e in told]
    data = {"hyperjob": h, "events": events, "events_of": len(read)}
    return render(request, caller, "hyperjob.html", data)


@page(action=True)
async def hyperjob_action(request: Request, caller: Caller) -> Response:
    """Cancel or delete every child, as the caller; the hub refuses what the caller's role may not."""
    gw = gateway(request)
    ref = _ref(request)
    verb = request.url.path.rsplit("/", 1)[1]
    if verb == "cancel":
        h = await gw.call(gw.hyperjobs.CancelHyperJob, ref, caller.token)
        result: dict[str, Any] = {"hyperjob": hyperjob_row(h)}
        target = f"/hyperjobs/{ref.namespace}/{ref.name}"
    elif verb == "delete":
        gone = await gw.call(gw.hyperjobs.DeleteHyperJob, ref, caller.token)
        result, target = {"deleted": f"{ref.namespace}/{ref.name}", "uids": list(gone.uids)}, "/hyperjobs"
    else:
        return error(request, caller, 404, f"no action {verb!r} on hyperjobs")
    if wants_json(request):
        return render(request, caller, "", result)
    return RedirectResponse(target, 303)
