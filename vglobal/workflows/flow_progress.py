"""One look at a JobFlow: which flows' Jobs to create now, which to delete, and its status.

Volcano's rules: a flow's Job is made once every target's Job is Completed (or, with a
``taskStatus`` probe, once the watched tasks reach their phase); the JobFlow is Failed as soon
as one of its Jobs fails (and nothing more is started), Succeed when every Job is Completed,
Running once one has started, Pending before. Under ``jobRetainPolicy: delete`` the Jobs are
deleted once the JobFlow has succeeded. Succeed and Failed are final.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from vglobal.model.jobflow import Flow, JobFlow, RetainPolicy
from vglobal.model.phases import FAILED_JOB_PHASES, JobPhase, is_finished
from vglobal.model.workflow_status import SKIPPED, WAITING, FlowStatus, JobFlowPhase, JobFlowStatus

__all__ = [
    "FlowJob",
    "FlowProgress",
    "TaskCounts",
    "flow_progress",
]

@dataclass(frozen=True, kw_only=True)
class TaskCounts:
    """A task's pods by phase, as agents report them."""

    replicas: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0

    def all_in(self, phase: str) -> bool:
        count = {"Pending": self.pending, "Running": self.running}.get(phase)
        if count is None:
            count = {"Succeeded": self.succeeded, "Failed": self.failed}.get(phase, 0)
        return self.replicas > 0 and count >= self.replicas


@dataclass(frozen=True, kw_only=True)
class FlowJob:
    """A flow's Job as the hub sees it now."""

    phase: str
    created: datetime | None = None
    finished: datetime | None = None
    tasks: Mapping[str, TaskCounts] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class FlowProgress:
    create: tuple[str, ...] = ()  # flows whose Job to create now (see jobflow.flow_job), in spec order
    delete: tuple[str, ...] = ()  # Job names to delete
    status: JobFlowStatus = field(default_factory=JobFlowStatus)


def _known_phases(
    jobflow: JobFlow, jobs: Mapping[str, FlowJob], previous: Mapping[str, FlowStatus]
) -> dict[str, FlowJob | None]:
    """Each flow's Job: as seen now, or as last recorded if it finished and was deleted since.

    A Job that disappears before finishing is made again, as Volcano does.
    """
    out: dict[str, FlowJob | None] = {}
    for f in jobflow.flows:
        seen = jobs.get(jobflow.job_name(f.name))
        before = previous.get(f.name)
        if seen is None and before is not None and is_finished(before.phase):
            seen = FlowJob(phase=before.phase, created=before.created, finished=before.finished)
        out[f.name] = seen
    return out


def _ready(flow: Flow, known: Mapping[str, FlowJob | None]) -> bool:
    targets = [known[t] for t in flow.depends_on]
    if all(t is not None and t.phase == JobPhase.Completed for t in targets):
        return True
    if not flow.probe:
        return False
    return all(any(_task_in(t, check.task_name, check.phase) for t in targets) for check in flow.probe)


def _task_in(job: FlowJob | None, task: str, phase: str) -> bool:
    counts = job.tasks.get(task) if job is not None else None
    return counts is not None and counts.all_in(phase)


def _phase(known: Mapping[str, FlowJob | None], previous: JobFlowPhase | None) -> JobFlowPhase:
    if previous is not None and previous.is_final():
        return previous
    phases = [j.phase for j in known.values() if j is not None]
    if any(p in FAILED_JOB_PHASES for p in phases):
        return JobFlowPhase.Failed
    if len(phases) == len(known) and all(p == JobPhase.Completed for p in phases):
        return JobFlowPhase.Succeed
    if previous == JobFlowPhase.Running or any(p != JobPhase.Pending for p in phases):
        return JobFlowPhase.Running
    return JobFlowPhase.Pending


def flow_progress(
    jobflow: JobFlow, jobs: Mapping[str, FlowJob], previous: JobFlowStatus | None = None
) -> FlowProgress:
    """Everything to do for ``jobflow`` now.

    ``jobs`` maps Job names (``<jobflow>-<flow>``) to the flows' Jobs that exist; ``previous``
    is the status the last look returned (it keeps the phases of Jobs deleted since).
    """
    before = {f.name: f for f in previous.flows} if previous is not None else {}
    known = _known_phases(jobflow, jobs, before)
    phase = _phase(known, previous.phase if previous is not None else None)
    create: tuple[str, ...] = ()
    if not phase.is_final():
        create = tuple(f.name for f in jobflow.flows if known[f.name] is None and _ready(f, known))
    delete: tuple[str, ...] = ()
    if phase == JobFlowPhase.Succeed and jobflow.job_retain_policy == RetainPolicy.delete:
        delete = tuple(jobflow.job_name(f.name) for f in jobflow.flows if jobflow.job_name(f.name) in jobs)
    flows = []
    for f in jobflow.flows:
        j = known[f.name]
        state = j.phase if j is not None else (SKIPPED if phase.is_final() else WAITING)
        flows.append(
            FlowStatus(
                name=f.name,
                job=jobflow.job_name(f.name),
                phase=state,
                depends_on=f.depends_on,
                created=j.created if j is not None else None,
                finished=j.finished if j is not None else None,
            )
        )
    return FlowProgress(create=create, delete=delete, status=JobFlowStatus(phase=phase, flows=tuple(flows)))
