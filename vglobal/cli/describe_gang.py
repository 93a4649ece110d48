"""The gang ``describe job`` shows: each task's replicas, its share of the gang, the request of
one pod, and the manifest field the gang count was read from, read again from the stored manifest
as the hub read it at submit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.errors import ManifestError
from vglobal.model.job import Job
from vglobal.model.resources import ResourceVector
from vglobal.model.workloads import kind_name, parse_run
from vglobal.sdk.rows import short


def _quantities(v: ResourceVector) -> str:
    return short(dict(sorted(v.to_quantities().items())))


def _pods(n: int) -> str:
    return f"{n} pod" if n == 1 else f"{n} pods"


def gang_lines(manifest: Mapping[str, Any]) -> list[str]:
    """The lines of the ``Gang`` section; none for a manifest that no longer parses (a kind this
    version does not read)."""
    try:
        job: Job = parse_run(manifest)
    except (ManifestError, KeyError, ValueError):
        return []
    counts = {name: n for name, _, n in job.gang()}
    rows = [
        (t.name, str(t.replicas), str(counts.get(t.name, 0)), _quantities(t.pod_request), t.gang_from or "-")
        for t in job.tasks
    ]
    head = ("TASK", "REPLICAS", "IN GANG", "PER POD", "FROM")
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head) - 1)]
    out = [f"Gang (derived from the {kind_name(manifest) or 'manifest'}):"]
    for r in (head, *rows):
        out.append("  " + "  ".join(f"{c:<{w}}" for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
    size = job.group_size()
    if size:
        groups = job.total_pods() // size
        out.append(f"  Groups: {groups} of {size} pods, each placed whole; one whole group starts the set")
    out.append(
        f"  Must start together: {_pods(sum(counts.values()))}, {_quantities(job.gang_request())} "
        f"(the whole job: {_pods(job.total_pods())}, {_quantities(job.total_request())})"
    )
    return out
