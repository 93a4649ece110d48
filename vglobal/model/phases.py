"""Phases of jobs (Volcano's), of ResourceBindings and of clusters."""

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


def is_finished(phase: str) -> bool:
    return phase in FINISHED_JOB_PHASES


class BindingPhase(StrEnum):
    Suspended = "Suspended"
    Dispatched = "Dispatched"
    Bound = "Bound"
    Running = "Running"
    Succeeded = "Succeeded"
    Failed = "Failed"
    Aborted = "Aborted"

    def is_terminal(self) -> bool:
        return self in (BindingPhase.Succeeded, BindingPhase.Failed, BindingPhase.Aborted)


# Phases in which a binding holds queue usage and cluster capacity.
HOLDING_PHASES = frozenset({BindingPhase.Dispatched, BindingPhase.Bound, BindingPhase.Running})


class ClusterState(StrEnum):
    Ready = "Ready"
    NotReady = "NotReady"
    Cordoned = "Cordoned"
