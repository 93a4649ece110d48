"""The cluster's Warning events about the pods of the agent's jobs (FailedMount, FailedScheduling
of a volume, BackOff, ...), passed on as events of the job: once per pod, reason and message, and
at most ``PER_JOB`` per job in ``WINDOW`` seconds (a crash-looping pod's events keep coming)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.bodies import OWNER_SUFFIX
from vglobal.agent.kube.records import PodRecord, rfc3339

CHECKPOINTED = "Checkpointed"  # the reason of an Event a workload posts on its pod when it saved its work

PER_JOB = 10
WINDOW = 60.0
SEEN = 10_000  # (pod, reason, message) remembered for deduplication, oldest forgotten first


@dataclass(frozen=True, slots=True)
class EventRecord:
    namespace: str
    pod: str  # the involved Pod's name ("" when the event is not about a pod)
    warning: bool
    reason: str
    message: str
    time: float | None = None  # when it happened (eventTime, else lastTimestamp), epoch seconds
    about: tuple[str, str] = ("", "")  # the involved object's kind and name (a Job's, say)


def event_record(obj: Mapping[str, Any]) -> EventRecord:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    return EventRecord(
        namespace=str(involved.get("namespace") or (obj.get("metadata") or {}).get("namespace") or ""),
        pod=str(involved.get("name") or "") if involved.get("kind") == "Pod" else "",
        warning=obj.get("type") == "Warning",
        reason=str(obj.get("reason") or ""),
        message=str(obj.get("message") or obj.get("note") or ""),
        time=rfc3339(obj.get("eventTime") or obj.get("lastTimestamp") or obj.get("firstTimestamp")),
        about=(str(involved.get("kind") or ""), str(involved.get("name") or "")),
    )


def checkpoint_of(ev: EventRecord, pods: Mapping[tuple[str, str], PodRecord]) -> tuple[str, float] | None:
    """(job uid, when) of a Checkpointed event about a pod of the agent's jobs, or about the job
    itself (an object named as the job: its pods' owner is named after it)."""
    if ev.reason != CHECKPOINTED or ev.time is None:
        return None
    if ev.pod:
        pod = pods.get((ev.namespace, ev.pod))
    else:
        owner = f"{ev.about[1]}{OWNER_SUFFIX}"
        pod = next((p for p in pods.values() if p.owner == owner and p.namespace == ev.namespace), None)
    return (pod.job_uid, ev.time) if pod is not None and pod.job_uid else None


class PodWarnings:
    """``report(job_uid, reason, message)`` is called for each Warning worth telling."""

    def __init__(self, report: Callable[[str, str, str], None]) -> None:
        self.report = report
        self._seen: OrderedDict[tuple[str, str, str, str], None] = OrderedDict()
        self._told: dict[str, list[float]] = {}  # job uid -> times told in the window

    def on_event(self, ev: EventRecord, pods: Mapping[tuple[str, str], PodRecord], now: float) -> None:
        if not (ev.warning and ev.pod and ev.reason):
            return
        pod = pods.get((ev.namespace, ev.pod))
        if pod is None or not pod.job_uid:
            return  # not a pod of the agent's jobs
        key = (ev.namespace, ev.pod, ev.reason, ev.message)
        if key in self._seen:
            return
        self._seen[key] = None
        if len(self._seen) > SEEN:
            self._seen.popitem(last=False)
        told = [t for t in self._told.get(pod.job_uid, []) if now - t < WINDOW]
        if len(told) >= PER_JOB:
            self._told[pod.job_uid] = told
            return
        self._told[pod.job_uid] = [*told, now]
        self.report(pod.job_uid, ev.reason, f"pod {ev.pod}: {ev.message}" if ev.message else f"pod {ev.pod}")
