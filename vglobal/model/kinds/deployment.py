"""apps/v1 Deployment: its ``main`` template's replicas, the gang by Volcano's annotation; long-running."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.errors import key_path
from vglobal.model.kinds.reading import (
    GROUP_MIN_MEMBER,
    MIN_MEMBER_AT,
    Tasks,
    WorkloadManifest,
    count,
    min_member,
    workload_reader,
)
from vglobal.model.kinds.record import WorkloadKind


def read_replicated(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    """A Deployment or StatefulSet: its replicas, the gang annotation's count of them (1 without)."""
    replicas = count(tasks.p, f"{base}.replicas", spec.get("replicas"), 1)
    gang = min_member(tasks.p, annotations, 1)
    if gang > replicas:
        tasks.p.add(
            key_path("metadata.annotations", GROUP_MIN_MEMBER), f"{gang} is more than the {replicas} replicas"
        )
    source = MIN_MEMBER_AT if GROUP_MIN_MEMBER in annotations else f"1 pod (no {GROUP_MIN_MEMBER} annotation)"
    tasks.add("main", f"{base}.template", spec.get("template"), replicas, gang, gang_from=source)


KIND = WorkloadKind(
    "apps/v1",
    "Deployment",
    "deployments",
    "deployment.apps",
    workload_reader(read_replicated),
    WorkloadManifest,
    order=13,
    long_running=True,
)
