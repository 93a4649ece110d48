"""Why a pending job waits: a kind a program can act on, beside the sentence a person reads."""

from __future__ import annotations

from enum import StrEnum


class WaitKind(StrEnum):
    """What stopped a job this cycle. The sentence carries the figures; the kind does not change
    while only the figures move, so the hub rewrites a stored reason at once only when its kind
    changes."""

    QueueMissing = "QueueMissing"
    QueueNotLeaf = "QueueNotLeaf"
    QueueClosed = "QueueClosed"
    QueueLookback = "QueueLookback"  # behind the first --queue-lookback jobs of its queue
    CycleBudget = "CycleBudget"  # the cycle reached --max-admissions-per-cycle
    ExceedsCapacity = "ExceedsCapacity"  # more than all schedulable clusters have together
    Capability = "Capability"  # a queue's capability (or inherited limit) on the job's path
    Guarantee = "Guarantee"  # other queues' unmet guarantees hold the capacity back
    NoFit = "NoFit"  # no candidate cluster fits the gang now
    ReservedForStarving = "ReservedForStarving"  # the capacity is held for a starving job
    Reclaiming = "Reclaiming"  # victims are being reclaimed for this job
    Starving = "Starving"  # waited past --starvation-after; capacity reserved for it
    BehindStarving = "BehindStarving"  # starving, but behind its queue's starving job
    NeverFits = "NeverFits"  # no candidate cluster could hold it even when empty
    Claimed = "Claimed"  # a victim: the room it left is claimed by the job it was taken for
    OverBudget = "OverBudget"  # its queue spent its GPU-hour budget for the period
    # Set by the hub outside admission, when it moves a job back to waiting (until the next cycle
    # says why it waits now), or when admission has not looked at the job yet.
    Rejected = "Rejected"  # the cluster's agent refused the binding (no room in time, bad manifest)
    Reclaimed = "Reclaimed"  # its run was stopped for a queue below its share
    Preempted = "Preempted"  # its run was stopped for a higher-priority job of its queue
    Drained = "Drained"  # its cluster was drained
    FailedOver = "FailedOver"  # its cluster went silent for too long
    # Admitted to a cluster that is NotReady now: it fails over unless the cluster comes back.
    ClusterNotReady = "ClusterNotReady"
    Unexamined = "Unexamined"  # submitted, not looked at by the dispatcher yet
    # Admitted in place of pods being evicted (lower-priority pods of its queue, or surplus pods
    # reclaimed): what it waits for until its own pods run.
    Preempting = "Preempting"


# The kinds admission itself decides; the others are the hub's.
HUB_KINDS = frozenset(
    {
        WaitKind.Rejected,
        WaitKind.Reclaimed,
        WaitKind.Preempted,
        WaitKind.Drained,
        WaitKind.FailedOver,
        WaitKind.ClusterNotReady,
        WaitKind.Unexamined,
        WaitKind.Preempting,
    }
)
ADMISSION_KINDS = frozenset(WaitKind) - HUB_KINDS
