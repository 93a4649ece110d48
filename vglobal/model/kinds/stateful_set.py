"""apps/v1 StatefulSet: read as a Deployment is; long-running."""

from __future__ import annotations

from vglobal.model.kinds.deployment import read_replicated
from vglobal.model.kinds.reading import WorkloadManifest, workload_reader
from vglobal.model.kinds.record import WorkloadKind

KIND = WorkloadKind(
    "apps/v1",
    "StatefulSet",
    "statefulsets",
    "statefulset.apps",
    workload_reader(read_replicated),
    WorkloadManifest,
    order=14,
    long_running=True,
)
