"""Job counts by phase and a grouping field, in one CountJobs call over the whole table."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from typing import Any

from vglobal.dashboard.gateway import Gateway
from vglobal.dashboard.jobs_query import JobQuery


@dataclass
class Summary:
    total: int
    by_phase: dict[str, int]
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per group value

    def groups(self, key: str) -> list[dict[str, Any]]:
        """Per value of ``key``: its total and its per-phase counts, the biggest group first."""
        out: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            group = out.setdefault(row[key], {"value": row[key], "total": 0, "phases": {}})
            group["total"] += row["count"]
            group["phases"][row["phase"]] = group["phases"].get(row["phase"], 0) + row["count"]
        return sorted(out.values(), key=lambda g: (-g["total"], g["value"]))


async def summary(gw: Gateway, token: str | None, query: JobQuery) -> Summary:
    group_by = ["phase"] if not query.group or query.group == "phase" else [query.group, "phase"]
    resp = await gw.call(gw.jobs.CountJobs, query.count_request(group_by), token)
    rows: list[dict[str, Any]] = [
        {"phase": g.phase, "queue": g.queue, "cluster": g.cluster, "namespace": g.namespace, "count": g.count}
        for g in resp.groups
    ]
    by_phase: dict[str, int] = {}
    for g in resp.groups:
        by_phase[g.phase] = by_phase.get(g.phase, 0) + int(g.count)
    return Summary(total=resp.total, by_phase=by_phase, rows=rows)


# A page under live updates asks again every few seconds: within this many seconds the same
# caller's same query is answered from here instead of counting millions of rows again, unless
# the page has seen a later change than the one the cached answer was counted after.
CACHE_SECONDS = 2.0
_cache: dict[tuple[str, JobQuery], tuple[float, int, Summary]] = {}


async def cached_summary(gw: Gateway, token: str | None, query: JobQuery, seen: int = 0) -> Summary:
    """``seen``: the last change revision the asking page was told of (0: none)."""
    key = (hashlib.sha256((token or "").encode()).hexdigest(), replace(query, page="", sort="", size=50))
    now = time.monotonic()
    hit = _cache.get(key)
    if hit is not None and now - hit[0] < CACHE_SECONDS and hit[1] >= seen:
        return hit[2]
    result = await summary(gw, token, query)
    if len(_cache) > 1000:
        _cache.clear()
    _cache[key] = (time.monotonic(), seen, result)
    return result
