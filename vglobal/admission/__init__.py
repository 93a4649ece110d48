"""Pure global admission: which pending job goes to which cluster this cycle, and why others wait.

``admit(snapshot)`` is a deterministic function of its input: no clock, no randomness, no I/O.
"""

from vglobal.admission.admit import admit
from vglobal.admission.snapshot import (
    PLACEMENTS,
    ROOT,
    AdmissionPolicy,
    AdmissionResult,
    Admit,
    Claim,
    ClusterSnap,
    Eviction,
    Gang,
    GroupRef,
    HyperNodeSnap,
    NodeSnap,
    Partitions,
    PendingByQueue,
    PendingJob,
    QueueSnap,
    QueueStatus,
    Reclaim,
    RunningJob,
    RunningPod,
    Snapshot,
    Wait,
)

__all__ = [
    "PLACEMENTS",
    "ROOT",
    "AdmissionPolicy",
    "AdmissionResult",
    "Admit",
    "Claim",
    "ClusterSnap",
    "Eviction",
    "Gang",
    "GroupRef",
    "HyperNodeSnap",
    "NodeSnap",
    "Partitions",
    "PendingByQueue",
    "PendingJob",
    "QueueSnap",
    "QueueStatus",
    "Reclaim",
    "RunningJob",
    "RunningPod",
    "Snapshot",
    "Wait",
    "admit",
]
