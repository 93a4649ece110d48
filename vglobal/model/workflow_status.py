"""The stored form of a CronJob's and a JobFlow's status: JSON with times as epoch seconds."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from vglobal.model.cron_decision import CronStatus
from vglobal.model.flow_progress import FlowStatus, JobFlowPhase, JobFlowStatus

__all__ = ["cron_status_from_json", "cron_status_to_json", "flow_status_from_json", "flow_status_to_json"]


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
