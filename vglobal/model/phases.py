"""Phases of jobs (Volcano's) and states of clusters (a binding's phases: ``model/binding.py``)."""

from __future__ import annotations

from enum import StrEnum


class JobPhase(StrEnum):
    Pending = "Pending"
    Running = "Running"
    Restarting = "Restarting"
    Completing = "Completing"
    Completed = "Completed"
    Aborting = "Aborting"
    Aborted = "Aborted"
    Terminating = "Terminating"
    Terminated = "Terminated"
    Failed = "Failed"


FINISHED_JOB_PHASES = frozenset({JobPhase.Completed, JobPhase.Aborted, JobPhase.Terminated, JobPhase.Failed})
# Finished without completing. Volcano counts only Failed (a CronJob's failed history) or Failed and
# Terminated (a JobFlow fails); a cancelled (Aborted) Job never completes either, so it counts too.
FAILED_JOB_PHASES = frozenset({JobPhase.Failed, JobPhase.Terminated, JobPhase.Aborted})


def is_finished(phase: str) -> bool:
    return phase in FINISHED_JOB_PHASES


class ClusterState(StrEnum):
    Ready = "Ready"
    NotReady = "NotReady"
    Cordoned = "Cordoned"
