"""The JSON ``vglobal sim run`` prints: every job as the hub last knew it, and every queue's
allocation over time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vglobal.model.quantity import unit_scale
from vglobal.sim.federation import Federation


def amounts(units: Mapping[str, int]) -> dict[str, int | float]:
    """Canonical units as whole amounts: GPUs and cpu in units (not milli-units), memory in bytes."""
    out: dict[str, int | float] = {}
    for r, v in sorted(units.items()):
        scale = unit_scale(r)
        out[r] = v // scale if v % scale == 0 else v / scale
    return out


def report(
    fed: Federation, now: float, samples: Mapping[str, Sequence[tuple[float, Mapping[str, int]]]]
) -> dict[str, Any]:
    jobs = []
    for rec in fed.records.values():
        job = rec.submission.job
        jobs.append(
            {
                "name": job.name,
                "namespace": job.namespace,
                "queue": job.queue,
                "phase": str(rec.phase),
                "cluster": rec.cluster,
                "admittedAt": rec.admitted_at,
                "pods": [{"name": p, "node": n or None, "phase": ph} for p, n, ph in rec.pods],
                "retryCount": rec.retry_count,
                "reason": rec.reason,
                "events": rec.events,
            }
        )
    queues = [
        {"name": name, "samples": [[t, amounts(units)] for t, units in got]} for name, got in samples.items()
    ]
    return {"time": now, "jobs": jobs, "queues": queues}
