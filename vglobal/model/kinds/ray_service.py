"""KubeRay's RayService: its Ray cluster (``rayClusterConfig``) read as a RayCluster is; long-running."""

from __future__ import annotations

from vglobal.model.kinds.ray_cluster import read_cluster
from vglobal.model.kinds.reading import WorkloadManifest, workload_reader
from vglobal.model.kinds.record import WorkloadKind

KIND = WorkloadKind(
    "ray.io/v1",
    "RayService",
    "rayservices",
    "rayservice.ray.io",
    workload_reader(
        lambda tasks, base, spec, _: read_cluster(
            tasks, f"{base}.rayClusterConfig", spec.get("rayClusterConfig")
        )
    ),
    WorkloadManifest,
    order=20,
    long_running=True,
)
