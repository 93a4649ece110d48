"""batch/v1 Job: its ``main`` template's parallelism (at most its completions); runs to its end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.reading import (
    GROUP_MIN_MEMBER,
    MIN_MEMBER_AT,
    Tasks,
    WorkloadManifest,
    count,
    min_member,
    workload_reader,
)
from vglobal.model.kinds.record import WorkloadKind


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    """A batch/v1 Job: its parallelism (at most its completions) runs as one gang unless annotated."""
    parallelism = count(tasks.p, f"{base}.parallelism", spec.get("parallelism"), 1)
    completions = count(tasks.p, f"{base}.completions", spec.get("completions"), parallelism)
    pods = min(parallelism, completions) if completions else parallelism
    source = MIN_MEMBER_AT if GROUP_MIN_MEMBER in annotations else f"{base}.parallelism"
    gang = min_member(tasks.p, annotations, pods)
    tasks.add("main", f"{base}.template", spec.get("template"), pods, gang, gang_from=source)


KIND = WorkloadKind(
    "batch/v1",
    "Job",
    "jobs",
    "job.batch",
    workload_reader(_read),
    WorkloadManifest,
    order=15,
)
