"""KubeRay's RayJob: its Ray cluster's tasks plus the ``submitter`` in K8sJobMode; runs to its end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.kinds.ray_cluster import read_cluster
from vglobal.model.kinds.reading import SUBMITTER, Tasks, WorkloadManifest, default_submitter, workload_reader
from vglobal.model.kinds.record import WorkloadKind


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    cluster = spec.get("rayClusterSpec")
    if cluster is None and spec.get("clusterSelector"):
        tasks.p.add(f"{base}.clusterSelector", "a RayJob on an existing Ray cluster cannot be federated")
        return
    read_cluster(tasks, f"{base}.rayClusterSpec", cluster)
    mode = spec.get("submissionMode", "K8sJobMode")
    if mode == "K8sJobMode":
        given = spec.get("submitterPodTemplate")
        source = f"{base}.submitterPodTemplate" if given else "KubeRay's default submitter pod"
        tasks.add(
            SUBMITTER,
            f"{base}.submitterPodTemplate",
            given or default_submitter(cluster),
            1,
            1,
            gang_from=f"{source} (K8sJobMode)",
        )


KIND = WorkloadKind(
    "ray.io/v1",
    "RayJob",
    "rayjobs",
    "rayjob.ray.io",
    workload_reader(_read),
    WorkloadManifest,
    order=11,
)
