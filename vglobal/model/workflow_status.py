"""The status of a CronJob and of a JobFlow: as Volcano shows it, and stored as JSON with times as
epoch seconds. The looks that compute it are in ``vglobal.workflows``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from vglobal.model import job
from vglobal.model.phases import JobPhase

__all__ = [
    "SKIPPED",
    "WAITING",
    "CronStatus",
    "FlowStatus",
    "JobFlowPhase",
    "JobFlowStatus",
    "cron_status_from_json",
    "cron_status_to_json",
    "flow_status_from_json",
    "flow_status_to_json",
]

# A flow with no Job yet: it waits for its dependencies, or never runs (the JobFlow ended).
WAITING = "Waiting"
SKIPPED = "Skipped"
# Volcano's status lists of job names, by the job phases they hold.
_STATUS_LISTS = {
    JobPhase.Pending: "pendingJobs",
    JobPhase.Running: "runningJobs",
    JobPhase.Completed: "completedJobs",
    JobPhase.Failed: "failedJobs",
    JobPhase.Terminated: "terminatedJobs",
}


def _stamp(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class JobFlowPhase(StrEnum):
    Pending = "Pending"
    Running = "Running"
    Succeed = "Succeed"
    Failed = "Failed"

    def is_final(self) -> bool:
        return self in (JobFlowPhase.Succeed, JobFlowPhase.Failed)


@dataclass(frozen=True, kw_only=True)
class CronStatus:
    active: tuple[str, ...] = ()  # names of the runs not finished, oldest first
    last_schedule_time: datetime | None = None
    last_successful_time: datetime | None = None
    # Not in Volcano's status: the latest scheduled time given up as too late, kept by the hub
    # so that each missed time is reported once and never started afterwards.
    last_missed_time: datetime | None = None

    def to_volcano(self, namespace: str) -> dict[str, Any]:
        """As Volcano's CronJobStatus (``active`` as object references, times in RFC 3339)."""
        out: dict[str, Any] = {}
        if self.active:
            out["active"] = [
                {"apiVersion": job.API_VERSION, "kind": job.KIND, "namespace": namespace, "name": n}
                for n in self.active
            ]
        for key, t in (
            ("lastScheduleTime", self.last_schedule_time),
            ("lastSuccessfulTime", self.last_successful_time),
        ):
            if t is not None:
                out[key] = _stamp(t)
        return out


@dataclass(frozen=True, kw_only=True)
class FlowStatus:
    name: str
    job: str
    phase: str  # the Job's phase, or WAITING / SKIPPED while it has none
    depends_on: tuple[str, ...] = ()
    created: datetime | None = None
    finished: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class JobFlowStatus:
    phase: JobFlowPhase = JobFlowPhase.Pending
    flows: tuple[FlowStatus, ...] = ()

    def to_volcano(self) -> dict[str, Any]:
        """As Volcano's JobFlowStatus: jobs listed by phase, one entry per created Job."""
        out: dict[str, Any] = {"state": {"phase": self.phase.value}}
        made = [f for f in self.flows if f.phase not in (WAITING, SKIPPED)]
        for phase, key in _STATUS_LISTS.items():
            out[key] = [f.job for f in made if f.phase == phase]
        out["unKnowJobs"] = [f.job for f in made if f.phase not in _STATUS_LISTS]
        out["jobStatusList"] = [
            {
                "name": f.job,
                "state": f.phase,
                "startTimestamp": _stamp(f.created),
                "endTimestamp": _stamp(f.finished),
            }
            for f in made
        ]
        return out


def _time(value: Any) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(float(value), UTC)


def _seconds(t: datetime | None) -> float | None:
    return None if t is None else t.timestamp()


def cron_status_to_json(status: CronStatus) -> dict[str, Any]:
    return {
        "active": list(status.active),
        "lastScheduleTime": _seconds(status.last_schedule_time),
        "lastSuccessfulTime": _seconds(status.last_successful_time),
        "lastMissedTime": _seconds(status.last_missed_time),
    }


def cron_status_from_json(doc: Mapping[str, Any]) -> CronStatus:
    return CronStatus(
        active=tuple(doc.get("active") or ()),
        last_schedule_time=_time(doc.get("lastScheduleTime")),
        last_successful_time=_time(doc.get("lastSuccessfulTime")),
        last_missed_time=_time(doc.get("lastMissedTime")),
    )


def flow_status_to_json(status: JobFlowStatus) -> dict[str, Any]:
    return {
        "phase": status.phase.value,
        "flows": [
            {
                "name": f.name,
                "job": f.job,
                "phase": f.phase,
                "dependsOn": list(f.depends_on),
                "created": _seconds(f.created),
                "finished": _seconds(f.finished),
            }
            for f in status.flows
        ],
    }


def flow_status_from_json(doc: Mapping[str, Any]) -> JobFlowStatus | None:
    """None for a JobFlow no look has been taken at yet."""
    if not doc:
        return None
    return JobFlowStatus(
        phase=JobFlowPhase(doc.get("phase", JobFlowPhase.Pending.value)),
        flows=tuple(
            FlowStatus(
                name=f["name"],
                job=f["job"],
                phase=f["phase"],
                depends_on=tuple(f.get("dependsOn") or ()),
                created=_time(f.get("created")),
                finished=_time(f.get("finished")),
            )
            for f in doc.get("flows") or ()
        ),
    )
