"""/queues: the queue tree with quota bars, job counts, allocation per cluster, the 24 h share plot,
and, for operators, create/edit/open/close."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml
from google.protobuf.timestamp_pb2 import Timestamp
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from vglobal.api.v1 import jobs_pb2, queues_pb2
from vglobal.dashboard.fmt import resources
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import error, gateway, page, render, wants_json
from vglobal.sdk import rows

HISTORY_SAMPLES = 96  # one every 15 minutes over 24 hours
VERBS = ("open", "close")


def tree(queues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The queues in depth-first order under their parents, each with its ``depth``."""
    names = {q["name"] for q in queues}
    children: dict[str, list[dict[str, Any]]] = {}
    for q in queues:
        parent = q["parent"] if q["parent"] in names and q["parent"] != q["name"] else ""
        children.setdefault(parent, []).append(q)
    out: list[dict[str, Any]] = []

    def walk(parent: str, depth: int) -> None:
        for q in sorted(children.get(parent, []), key=lambda q: q["name"]):
            out.append({**q, "depth": depth})
            walk(q["name"], depth + 1)

    walk("", 0)
    return out


async def queues_data(request: Request, caller: Caller) -> dict[str, Any]:
    gw = gateway(request)
    since = Timestamp()
    since.FromDatetime(datetime.now(UTC) - timedelta(hours=24))
    listed, history, running = await asyncio.gather(
        gw.call(gw.queues.ListQueues, queues_pb2.ListQueuesRequest(), caller.token),
        gw.call(
            gw.queues.GetQueueHistory,
            queues_pb2.QueueHistoryRequest(since=since, max_samples=HISTORY_SAMPLES),
            caller.token,
        ),
        gw.call(
            gw.jobs.CountJobs,
            jobs_pb2.CountJobsRequest(phase="Running", group_by=["queue", "cluster"]),
            caller.token,
        ),
    )
    queues = [rows.queue(q) for q in listed.queues]
    per_cluster: dict[str, dict[str, int]] = {}
    for g in running.groups:
        per_cluster.setdefault(g.queue, {})[g.cluster or "-"] = int(g.count)
    shares = {h.name: [(s.time.seconds, s.share) for s in h.samples] for h in history.queues if h.samples}
    for q in queues:
        q["resources"] = resources(q["guarantee"], q["deserved"], q["allocated"], q["capability"])
        q["clusters"] = per_cluster.get(q["name"], {})
    return {"queues": tree(queues), "shares": shares}


@page()
async def queues_page(request: Request, caller: Caller) -> Response:
    return render(request, caller, "queues.html", await queues_data(request, caller))


def manifest(form: dict[str, str]) -> str:
    """A Volcano Queue from the form's fields; the hub validates it (names the bad field)."""
    spec: dict[str, Any] = {"weight": int(form.get("weight") or 1)}
    if form.get("parent"):
        spec["parent"] = form["parent"]
    if form.get("priority"):
        spec["priority"] = int(form["priority"])
    spec["reclaimable"] = form.get("reclaimable") == "on"
    for key in ("capability", "deserved", "guarantee"):
        amounts = {r: form.get(f"{key}.{r}", "").strip() for r in ("cpu", "memory", "nvidia.com/gpu")}
        amounts = {r: v for r, v in amounts.items() if v}
        if amounts:
            spec[key] = {"resource": amounts} if key == "guarantee" else amounts
    doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": form.get("name", "").strip()},
        "spec": spec,
    }
    return yaml.safe_dump(doc, sort_keys=False)


@page(action=True)
async def queue_apply(request: Request, caller: Caller) -> Response:
    form = {k: str(v) for k, v in (await request.form()).items()}
    try:
        text = form.get("manifest", "").strip() or manifest(form)
    except ValueError as exc:
        return error(request, caller, 400, f"weight and priority are whole numbers: {exc}")
    gw = gateway(request)
    queue = await gw.call(gw.queues.ApplyQueue, queues_pb2.ApplyRequest(manifest=text), caller.token)
    if wants_json(request):
        return render(request, caller, "", {"queue": rows.queue(queue)})
    return RedirectResponse(f"/queues#queue-{queue.name}", 303)


@page(action=True)
async def queue_state(request: Request, caller: Caller) -> Response:
    gw = gateway(request)
    ref = queues_pb2.QueueRef(name=request.path_params["name"])
    verb = request.url.path.rsplit("/", 1)[1]
    fns = {"open": gw.queues.OpenQueue, "close": gw.queues.CloseQueue}
    if verb not in fns:
        return error(request, caller, 404, f"no action {verb!r} on queues")
    fn = fns[verb]
    queue = await gw.call(fn, ref, caller.token)
    if wants_json(request):
        return render(request, caller, "", {"queue": rows.queue(queue)})
    return RedirectResponse(f"/queues#queue-{queue.name}", 303)
