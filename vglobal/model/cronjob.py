"""Volcano's CronJob (``batch.volcano.sh/v1alpha1``): a Job made on a cron schedule.

Validated as Volcano's and Kubernetes' webhooks do, and its ``jobTemplate`` exactly as a
submitted Job is (the problems named under ``spec.jobTemplate``). Each scheduled run is a Job
named ``<cronjob>-<scheduled minutes since the epoch>``, so one scheduled time gives one name.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import Field, StrictBool, StrictInt, StrictStr

from vglobal.model import job
from vglobal.model.cron_schedule import CronSchedule, load_time_zone, parse_schedule
from vglobal.model.errors import ManifestError, Problems
from vglobal.model.job import Job, spec_queue
from vglobal.model.job_template import check_namespace, job_document, parse_embedded_job
from vglobal.model.k8s import DNS1123_LABEL, OBJECT_FIELDS, Metadata, Model, check_name, validate_model

__all__ = [
    "MAX_NAME_LENGTH",
    "ConcurrencyPolicy",
    "CronJob",
    "manual_run_job",
    "parse_cron_job",
    "run_job",
    "run_name",
]

API_VERSION = job.API_VERSION
KIND = "CronJob"

# A run's name adds "-" and up to 10 digits of minutes; Volcano keeps the whole within 63.
MAX_NAME_LENGTH = 52
DEFAULT_SUCCESSFUL_HISTORY = 3
DEFAULT_FAILED_HISTORY = 1
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
SCHEDULED_TIMESTAMP_ANNOTATION = "volcano.sh/cronjob-scheduled-timestamp"
# What kubectl marks a Job made by hand from a CronJob with.
INSTANTIATE_ANNOTATION = "cronjob.kubernetes.io/instantiate"
# The length of a run's name suffix for the next century, used to check the template's pod names.
_SAMPLE_SUFFIX = "-" + "9" * 8
_SPEC_AT, _METADATA_AT = "spec.jobTemplate.spec", "spec.jobTemplate.metadata"


class ConcurrencyPolicy(StrEnum):
    Allow = "Allow"
    Forbid = "Forbid"
    Replace = "Replace"


@dataclass(frozen=True, kw_only=True)
class CronJob:
    name: str
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    schedule: CronSchedule
    time_zone: str | None = None  # as written; None means UTC
    concurrency_policy: ConcurrencyPolicy = ConcurrencyPolicy.Allow
    starting_deadline_seconds: int | None = None
    suspend: bool = False
    successful_jobs_history_limit: int = DEFAULT_SUCCESSFUL_HISTORY
    failed_jobs_history_limit: int = DEFAULT_FAILED_HISTORY
    template_labels: Mapping[str, str] = field(default_factory=dict)
    template_annotations: Mapping[str, str] = field(default_factory=dict)
    job_spec: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone or "UTC")

    @property
    def queue(self) -> str:
        """The queue its runs go to (what a caller must be allowed to submit to)."""
        return spec_queue(self.job_spec)


# --- wire schema (shape and types; rules are checked below with field paths) ---


class _JobTemplateSpec(Model):
    shapes = {"spec": job.JOB_SPEC}
    metadata: Metadata = Field(default_factory=Metadata)
    # ``spec`` is read from the raw document by the Job parser.


class _CronJobSpec(Model):
    schedule: StrictStr
    time_zone: StrictStr | None = None
    starting_deadline_seconds: StrictInt | None = None
    concurrency_policy: StrictStr = ""
    suspend: StrictBool | None = None
    successful_jobs_history_limit: StrictInt | None = None
    failed_jobs_history_limit: StrictInt | None = None
    job_template: _JobTemplateSpec


class CronJobManifest(Model):
    passthrough = OBJECT_FIELDS
    metadata: Metadata = Field(default_factory=Metadata)
    spec: _CronJobSpec


# --- parsing ---


def _check_cron_name(p: Problems, name: str) -> bool:
    before = len(p.items)
    check_name(p, "metadata.name", name, label=True)
    if len(p.items) == before and len(name) > MAX_NAME_LENGTH:
        p.add(
            "metadata.name",
            f"must be no more than {MAX_NAME_LENGTH} characters, so that its runs' names "
            f"(<name>-<minutes since the epoch>) stay within 63",
        )
    return len(p.items) == before


def _limit(p: Problems, where: str, value: int | None, default: int) -> int:
    if value is None:
        return default
    if value < 0:
        p.add(where, "must be >= 0")
    elif value > INT32_MAX:
        p.add(where, f"must be at most {INT32_MAX}")
    return value


def _policy(p: Problems, value: str) -> ConcurrencyPolicy:
    if not value:
        return ConcurrencyPolicy.Allow
    try:
        return ConcurrencyPolicy(value)
    except ValueError:
        p.add("spec.concurrencyPolicy", f'must be "Allow", "Forbid" or "Replace", not "{value}"')
        return ConcurrencyPolicy.Allow


def _raw_template_spec(doc: Mapping[str, Any]) -> Any:
    spec = doc.get("spec")
    template = spec.get("jobTemplate") if isinstance(spec, Mapping) else None
    return template.get("spec") if isinstance(template, Mapping) else None


def _template(p: Problems, doc: Mapping[str, Any], m: CronJobManifest, name: str, ns: str) -> None:
    """Validate the jobTemplate as the Job a run would be (with a run-length name)."""
    raw_spec = _raw_template_spec(doc)
    meta = m.spec.job_template.metadata
    sample = job_document(
        name=(name if DNS1123_LABEL.match(name) else "cronjob")[:MAX_NAME_LENGTH] + _SAMPLE_SUFFIX,
        namespace=ns if DNS1123_LABEL.match(ns) else "default",
        spec=raw_spec,
        labels=meta.labels,
        annotations=meta.annotations,
    )
    parse_embedded_job(p, sample, spec_at=_SPEC_AT, metadata_at=_METADATA_AT)


def parse_cron_job(doc: Mapping[str, Any]) -> CronJob:
    """Validate and default one CronJob document; raises ManifestError naming every bad field."""
    m = validate_model(CronJobManifest, doc)
    p = Problems()
    meta, spec = m.metadata, m.spec
    _check_cron_name(p, meta.name)
    namespace = check_namespace(p, meta)
    zone = load_time_zone(p, "spec.timeZone", spec.time_zone)
    schedule = parse_schedule(p, "spec.schedule", spec.schedule, zone or "UTC")
    deadline = spec.starting_deadline_seconds
    if deadline is not None and deadline < 0:
        p.add("spec.startingDeadlineSeconds", "must be >= 0")
    elif deadline is not None and deadline > INT64_MAX:
        p.add("spec.startingDeadlineSeconds", f"must be at most {INT64_MAX}")
    policy = _policy(p, spec.concurrency_policy)
    successful = _limit(
        p, "spec.successfulJobsHistoryLimit", spec.successful_jobs_history_limit, DEFAULT_SUCCESSFUL_HISTORY
    )
    failed = _limit(p, "spec.failedJobsHistoryLimit", spec.failed_jobs_history_limit, DEFAULT_FAILED_HISTORY)
    _template(p, doc, m, meta.name, namespace)
    p.raise_if_any()
    assert schedule is not None
    raw_spec = _raw_template_spec(doc)
    return CronJob(
        name=meta.name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        schedule=schedule,
        time_zone=spec.time_zone,
        concurrency_policy=policy,
        starting_deadline_seconds=deadline,
        suspend=bool(spec.suspend),
        successful_jobs_history_limit=successful,
        failed_jobs_history_limit=failed,
        template_labels=dict(spec.job_template.metadata.labels),
        template_annotations=dict(spec.job_template.metadata.annotations),
        job_spec=copy.deepcopy(dict(raw_spec)) if isinstance(raw_spec, Mapping) else {},
        raw=copy.deepcopy(dict(doc)),
    )


# --- runs ---


def run_name(cron_name: str, scheduled_time: datetime) -> str:
    """``<cronjob>-<minutes since the epoch>`` of the scheduled time, as Kubernetes names runs."""
    if scheduled_time.tzinfo is None:
        raise ValueError("scheduled_time must be timezone-aware")
    return f"{cron_name}-{int(scheduled_time.timestamp()) // 60}"


def _rfc3339(t: datetime, zone: ZoneInfo) -> str:
    local = t.astimezone(zone).replace(microsecond=0)
    text = local.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _owner(cron: CronJob) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": cron.name,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _run(cron: CronJob, name: str, annotations: Mapping[str, str]) -> Job:
    doc = job_document(
        name=name,
        namespace=cron.namespace,
        spec=cron.job_spec,
        labels=cron.template_labels,
        annotations={**cron.template_annotations, **annotations},
        owner=_owner(cron),
    )
    p = Problems()
    made = parse_embedded_job(p, doc, spec_at=_SPEC_AT, metadata_at=_METADATA_AT)
    if made is None:
        raise ManifestError(p.items)
    return made


def run_job(cron: CronJob, scheduled_time: datetime) -> Job:
    """The Job of the run scheduled at ``scheduled_time``: the template, named and annotated."""
    stamp = _rfc3339(scheduled_time, cron.zone)
    return _run(cron, run_name(cron.name, scheduled_time), {SCHEDULED_TIMESTAMP_ANNOTATION: stamp})


def manual_run_job(cron: CronJob, name: str) -> Job:
    """A Job made by hand from the template (``create job NAME --from cronjob/CRON``).

    Raises ManifestError when ``name`` is not a valid Job name.
    """
    p = Problems()
    check_name(p, "metadata.name", name, label=True)
    p.raise_if_any()
    return _run(cron, name, {INSTANTIATE_ANNOTATION: "manual"})
