"""A job's ResourceBinding: its phases, the phase sets the hub reasons with, the transitions it may
make, and which run of the job it names.

A binding is admitted to one cluster at a time; every admission gives it a new ``generation``, and
the pair (cluster, generation) names one run of the job. Reports and acknowledgements of a run
change the binding only while that run is its current one (fencing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from vglobal.model.phases import JobPhase


class BindingPhase(StrEnum):
    Suspended = "Suspended"  # waits for admission (again, after a re-queue)
    Dispatched = "Dispatched"  # admitted to a cluster; its agent has not acknowledged it yet
    Bound = "Bound"  # the agent accepted it
    Running = "Running"  # the agent reports the job running
    Succeeded = "Succeeded"
    Failed = "Failed"
    Aborted = "Aborted"  # cancelled (or aborted by its own policies)


_P = BindingPhase

# Admitted and not finished: the binding holds its queue's usage and its cluster's capacity, and
# the cluster's agent runs it (or is about to).
ADMITTED: frozenset[BindingPhase] = frozenset({_P.Dispatched, _P.Bound, _P.Running})
# Admitted, but its agent has not reported where its pods run yet: admission still counts its gang
# against the cluster's free capacity.
UNPLACED: frozenset[BindingPhase] = frozenset({_P.Dispatched, _P.Bound})
# Not finished: waiting for admission or admitted. What the dispatcher keeps track of.
UNFINISHED: frozenset[BindingPhase] = frozenset({_P.Suspended, *ADMITTED})
# Finished for good: nothing moves a binding out of these.
FINISHED: frozenset[BindingPhase] = frozenset({_P.Succeeded, _P.Failed, _P.Aborted})
# Finished by its run's own final report (Aborted may also be a cancel by the user).
ENDED_BY_RUN: frozenset[BindingPhase] = frozenset({_P.Succeeded, _P.Failed})

# Every move a binding may make, from → to (staying in a phase is no move):
# - Suspended → Dispatched: admission (a new generation, a cluster);
# - Dispatched → Bound: the agent accepted it;
# - Dispatched | Bound → Running: the agent reports the job running;
# - admitted → Succeeded | Failed | Aborted: the agent reports the job finished;
# - admitted → Suspended: re-queued (rejected by the agent, reclaimed, drained, failed over);
# - Suspended | admitted → Aborted: cancelled by the user.
TRANSITIONS: Mapping[BindingPhase, frozenset[BindingPhase]] = {
    _P.Suspended: frozenset({_P.Dispatched, _P.Aborted}),
    _P.Dispatched: frozenset({_P.Bound, _P.Running, _P.Suspended, *FINISHED}),
    _P.Bound: frozenset({_P.Running, _P.Suspended, *FINISHED}),
    _P.Running: frozenset({_P.Suspended, *FINISHED}),
    _P.Succeeded: frozenset(),
    _P.Failed: frozenset(),
    _P.Aborted: frozenset(),
}


def allowed(source: BindingPhase | str, target: BindingPhase | str) -> bool:
    """Whether a binding in phase ``source`` may move to ``target``."""
    return BindingPhase(target) in TRANSITIONS[BindingPhase(source)]


def sources(target: BindingPhase | str) -> list[str]:
    """The phases a binding may move to ``target`` from (for the store's guards on every move)."""
    return [p.value for p in BindingPhase if BindingPhase(target) in TRANSITIONS[p]]


def values(phases: frozenset[BindingPhase]) -> list[str]:
    """A phase set as the store's texts, in declaration order."""
    return [p.value for p in BindingPhase if p in phases]


# Where a run's report of its job's (Volcano) phase moves the binding; a Pending job moves nothing.
_REPORTED: Mapping[str, BindingPhase] = {
    JobPhase.Running: _P.Running,
    JobPhase.Restarting: _P.Running,
    JobPhase.Completing: _P.Running,
    JobPhase.Completed: _P.Succeeded,
    JobPhase.Failed: _P.Failed,
    JobPhase.Terminated: _P.Failed,
    JobPhase.Aborted: _P.Aborted,
}


def reported(job_phase: str) -> BindingPhase | None:
    """The phase a binding moves to when its current run reports the job in ``job_phase``."""
    return _REPORTED.get(job_phase)


@dataclass(frozen=True, slots=True)
class BindingRef:
    """Where a binding stands: its phase and the run (cluster, generation) it last admitted.

    A re-queued binding keeps its generation until the next admission and has no cluster.
    """

    phase: BindingPhase
    cluster: str | None
    generation: int

    @classmethod
    def of(cls, phase: str, cluster: str | None, generation: int) -> BindingRef:
        return cls(BindingPhase(phase), cluster, int(generation))

    def names_run(self, cluster: str, generation: int) -> bool:
        """Whether (cluster, generation) is the run this binding last admitted, in any phase."""
        return self.cluster == cluster and self.generation == generation

    def is_current(self, cluster: str, generation: int) -> bool:
        """Whether (cluster, generation) is the binding's admitted, unfinished run: the only run
        whose reports may change it."""
        return self.phase in ADMITTED and self.names_run(cluster, generation)


def stop_reason(ref: BindingRef | None, cluster: str, generation: int) -> str | None:
    """Why a cluster must stop its run (cluster, generation) of a job whose binding is ``ref``
    (None: the job is gone), or None when the run may go on or has ended by itself.

    A run whose binding it finished itself (Succeeded or Failed by its own final report) is not
    stopped: its agent has finished it already, and the hub may learn of that report before it
    forgets the run.
    """
    if ref is None:
        return "job deleted"
    if ref.is_current(cluster, generation):
        return None
    if ref.phase in ENDED_BY_RUN and ref.names_run(cluster, generation):
        return None
    if ref.phase is BindingPhase.Aborted:
        return "job cancelled"
    if ref.phase is BindingPhase.Suspended:
        if ref.generation == generation:
            return f"generation {generation} was re-queued; the job waits to be admitted again"
        return f"generation {generation} is stale (generation {ref.generation} was re-queued since)"
    where = f"generation {ref.generation} on {ref.cluster}"
    if ref.phase in FINISHED:
        return f"generation {generation} is stale (the job ended as {where}, {ref.phase})"
    return f"generation {generation} is stale (now {where})"
