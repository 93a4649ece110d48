"""JobSet (``jobset.x-k8s.io/v1alpha2``): one task per replicatedJob, its pods the Job template's
parallelism (at most its completions) times the replicatedJob's replicas; the whole set is one gang
unless Volcano's ``group-min-member`` annotation says how many of its pods; runs to its end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.reading import (
    GROUP_MIN_MEMBER,
    MIN_MEMBER_AT,
    Tasks,
    WorkloadManifest,
    count,
    dig,
    min_member,
    whole_gang,
    workload_reader,
)
from vglobal.model.kinds.record import WorkloadKind


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    jobs = spec.get("replicatedJobs")
    if not isinstance(jobs, list) or not jobs:
        tasks.p.add(f"{base}.replicatedJobs", "required: at least one replicated job")
        return
    for i, rj in enumerate(jobs):
        where = f"{base}.replicatedJobs[{i}]"
        if not isinstance(rj, Mapping):
            tasks.p.add(where, "must be a mapping")
            continue
        replicas = count(tasks.p, f"{where}.replicas", rj.get("replicas"), 1)
        job_spec = dig(rj, "template", "spec") or {}
        parallelism = count(tasks.p, f"{where}.template.spec.parallelism", job_spec.get("parallelism"), 1)
        completions = count(
            tasks.p, f"{where}.template.spec.completions", job_spec.get("completions"), parallelism
        )
        per_job = min(parallelism, completions) if completions else parallelism
        pods = per_job * replicas
        source = f"{where}.template.spec.parallelism {per_job} x {where}.replicas {replicas}"
        if GROUP_MIN_MEMBER in annotations:
            source = MIN_MEMBER_AT
        tasks.add(
            str(rj.get("name") or ""),
            f"{where}.template.spec.template",
            job_spec.get("template"),
            pods,
            pods,
            name_at=f"{where}.name",
            gang_from=source,
        )
    if GROUP_MIN_MEMBER in annotations:
        whole_gang(tasks, MIN_MEMBER_AT, min_member(tasks.p, annotations, 1))


KIND = WorkloadKind(
    "jobset.x-k8s.io/v1alpha2",
    "JobSet",
    "jobsets",
    "jobset.jobset.x-k8s.io",
    workload_reader(_read),
    WorkloadManifest,
    order=16,
)
