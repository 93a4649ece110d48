"""KubeRay's RayCluster: its head plus one task per worker group (``groupName``); long-running."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.reading import Tasks, WorkloadManifest, count, dig, workload_reader
from vglobal.model.kinds.record import WorkloadKind


def read_cluster(tasks: Tasks, base: str, spec: Any) -> None:
    """Head plus worker groups; with in-tree autoscaling the gang holds each group's minReplicas,
    without it the desired replicas (KubeRay's Volcano integration)."""
    if not isinstance(spec, Mapping):
        tasks.p.add(base, "required")
        return
    tasks.add(
        "head",
        f"{base}.headGroupSpec.template",
        dig(spec, "headGroupSpec", "template"),
        1,
        1,
        gang_from=f"{base}.headGroupSpec (the head is always in the gang)",
    )
    autoscaling = spec.get("enableInTreeAutoscaling") is True
    groups = spec.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        tasks.p.add(f"{base}.workerGroupSpecs", "must be a list")
        return
    for i, group in enumerate(groups):
        where = f"{base}.workerGroupSpecs[{i}]"
        if not isinstance(group, Mapping):
            tasks.p.add(where, "must be a mapping")
            continue
        hosts = max(count(tasks.p, f"{where}.numOfHosts", group.get("numOfHosts"), 1), 1)
        low = count(tasks.p, f"{where}.minReplicas", group.get("minReplicas"), 0)
        replicas = count(tasks.p, f"{where}.replicas", group.get("replicas"), low)
        if "maxReplicas" in group:
            high = count(tasks.p, f"{where}.maxReplicas", group.get("maxReplicas"), replicas)
            if low > high:
                tasks.p.add(f"{where}.minReplicas", f"minReplicas {low} is more than maxReplicas {high}")
        gang = low if autoscaling else replicas
        source = (
            f"{where}.minReplicas (in-tree autoscaling on)"
            if autoscaling
            else f"{where}.replicas (autoscaling off)"
        )
        if hosts > 1:
            source += f" x numOfHosts {hosts}"
        name = group.get("groupName")
        tasks.add(
            str(name or ""),
            f"{where}.template",
            group.get("template"),
            replicas * hosts,
            gang * hosts,
            name_at=f"{where}.groupName",
            gang_from=source,
        )


KIND = WorkloadKind(
    "ray.io/v1",
    "RayCluster",
    "rayclusters",
    "raycluster.ray.io",
    workload_reader(lambda tasks, base, spec, _: read_cluster(tasks, base, spec)),
    WorkloadManifest,
    order=10,
    long_running=True,
)
