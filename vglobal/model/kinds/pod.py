"""A plain ``v1`` Pod: one ``main`` task of one pod, the pod itself its template, a gang of 1. A pod
naming a Volcano PodGroup (``scheduling.k8s.io/group-name``) is part of that PodGroup's job
(``pod_group.py``); one whose PodGroup is not beside it is refused, naming it. Runs to its end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vglobal.model.errors import key_path
from vglobal.model.kinds.reading import Tasks, WorkloadManifest, workload_reader
from vglobal.model.kinds.record import WorkloadKind

GROUP_NAME = "scheduling.k8s.io/group-name"


def _read(tasks: Tasks, base: str, spec: Mapping[str, Any], annotations: Mapping[str, str]) -> None:
    if GROUP_NAME in annotations:
        tasks.p.add(
            key_path("metadata.annotations", GROUP_NAME),
            f'names PodGroup "{annotations[GROUP_NAME]}", which is not given with it: apply the PodGroup '
            "(scheduling.volcano.sh/v1beta1) and its pods together",
        )
        return
    template = {"metadata": {"annotations": dict(annotations)}, "spec": dict(spec)}
    tasks.add("main", "", template, 1, 1, gang_from="1 pod (a plain Pod)")
    if isinstance(spec.get("priorityClassName"), str) and spec["priorityClassName"]:
        tasks.priority = spec["priorityClassName"]


KIND = WorkloadKind("v1", "Pod", "pods", "pod", workload_reader(_read), WorkloadManifest, order=21)
