"""/pods: the pods of the jobs that hold a cluster, as their clusters name and report them, across
jobs (Volcano's dashboard has the same page): fuzzy search, namespace and status filters, sort."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from vglobal.dashboard.inputs import BadInput
from vglobal.dashboard.session import Caller
from vglobal.dashboard.web import gateway, page, render
from vglobal.sdk import rows

# Jobs whose pods are listed: those that may hold pods on a cluster now.
LIVE_PHASES = ("Pending", "Running", "Restarting", "Completing", "Aborting", "Terminating")
MAX_JOBS = 2_000  # jobs read for one page (a page of pods, not the federation's every pod)
SHOWN = 1_000  # rows drawn at most
SORTS = ("name", "namespace", "job", "status", "cluster", "node", "restarts")
STATUSES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


def fuzzy(needle: str, hay: str) -> bool:
    """Every character of ``needle`` in ``hay`` in order, ignoring case ("trw0" finds "train-worker-0")."""
    it = iter(hay.lower())
    return all(ch in it for ch in needle.lower())


def _query(request: Request) -> dict[str, str]:
    q = {k: request.query_params.get(k, "").strip() for k in ("q", "namespace", "status", "sort")}
    if q["status"] and q["status"] not in STATUSES:
        raise BadInput(f"status: {q['status'][:40]!r} is not one of {', '.join(STATUSES)}")
    if q["sort"] and q["sort"].removeprefix("-") not in SORTS:
        raise BadInput(f"sort: {q['sort'][:40]!r} is not one of {', '.join(SORTS)} (- reverses)")
    if len(q["q"]) > 200:
        raise BadInput("q: at most 200 characters")
    return q


def select(pods: list[dict[str, Any]], q: dict[str, str]) -> list[dict[str, Any]]:
    """The pods that match the query, in its order (by namespace and name unless it says)."""
    out = [
        p
        for p in pods
        if (not q["namespace"] or p["namespace"] == q["namespace"])
        and (not q["status"] or p["status"] == q["status"])
        and (not q["q"] or fuzzy(q["q"], f"{p['namespace']}/{p['name']} {p['job']} {p['node']}"))
    ]
    out.sort(key=lambda p: (p["namespace"], p["name"]))
    key = q["sort"].removeprefix("-")
    if key:
        out.sort(key=lambda p: p[key], reverse=q["sort"].startswith("-"))
    return out


async def _live_pods(request: Request, caller: Caller, namespace: str) -> tuple[list[dict[str, Any]], bool]:
    """(every pod of the jobs the caller may read that may hold pods, whether jobs were left out)."""
    client = gateway(request).with_token(caller.token)

    async def of(phase: str) -> list[Any]:
        found = []
        async for job in client.list_jobs(500, phase=phase, namespace=namespace):
            found.append(job)
            if len(found) >= MAX_JOBS:
                break
        return found

    jobs = [j for batch in await asyncio.gather(*(of(p) for p in LIVE_PHASES)) for j in batch]
    return [p for j in jobs if j.cluster for p in rows.pods(j)], len(jobs) >= MAX_JOBS


@page()
async def pods_page(request: Request, caller: Caller) -> Response:
    q = _query(request)
    pods, more = await _live_pods(request, caller, q["namespace"])
    chosen = select(pods, q)
    data = {
        "query": q,
        "pods": chosen[:SHOWN],
        "total": len(chosen),
        "cut": more or len(chosen) > SHOWN,
        "namespaces": sorted({p["namespace"] for p in pods} | ({q["namespace"]} - {""})),
        "statuses": STATUSES,
        "sorts": SORTS,
    }
    return render(request, caller, "pods.html", data)
