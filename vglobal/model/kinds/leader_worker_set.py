"""LeaderWorkerSet: ``leader`` and ``worker`` tasks, its groups each placed whole; long-running."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.reading import Tasks, WorkloadManifest, count, workload_reader
from vglobal.model.kinds.record import WorkloadKind


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    """``replicas`` groups of ``size`` pods (a leader and size-1 workers), each group a gang of its
    own as Volcano makes it: one whole group starts the set, the others start whole as room allows."""
    groups = count(tasks.p, f"{base}.replicas", spec.get("replicas"), 1)
    lwt = spec.get("leaderWorkerTemplate")
    if not isinstance(lwt, Mapping):
        tasks.p.add(f"{base}.leaderWorkerTemplate", "required")
        return
    size = count(tasks.p, f"{base}.leaderWorkerTemplate.size", lwt.get("size"), 1)
    if size < 1:
        tasks.p.add(f"{base}.leaderWorkerTemplate.size", "must be >= 1")
        size = 1
    worker = lwt.get("workerTemplate")
    leader = lwt.get("leaderTemplate", worker)
    each = f"of each of the {base}.replicas groups"
    tasks.add(
        "leader",
        f"{base}.leaderWorkerTemplate.leaderTemplate",
        leader,
        groups,
        1,
        gang_from=f"the leader {each}",
        group_pods=1,
    )
    if size > 1:
        tasks.add(
            "worker",
            f"{base}.leaderWorkerTemplate.workerTemplate",
            worker,
            groups * (size - 1),
            size - 1,
            gang_from=f"{base}.leaderWorkerTemplate.size - 1 workers {each}",
            group_pods=size - 1,
        )


KIND = WorkloadKind(
    "leaderworkerset.x-k8s.io/v1",
    "LeaderWorkerSet",
    "leaderworkersets",
    "leaderworkerset.leaderworkerset.x-k8s.io",
    workload_reader(_read),
    WorkloadManifest,
    order=12,
    long_running=True,
    grouped=True,
)
