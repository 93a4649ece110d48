"""RayCluster: its head and worker groups' templates; Running once KubeRay says ``state: ready``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Template, Workload, dig, spec_of
from vglobal.model.kinds import ray_cluster

KUBERAY = "KubeRay >= 1.5.1 (ray.io/v1 CRDs and its operator)"


def ray_templates(cluster_spec: Any) -> Iterator[Template]:
    head = dig(cluster_spec, "headGroupSpec", "template")
    if isinstance(head, dict):
        yield "head", head
    for group in dig(cluster_spec, "workerGroupSpecs") or []:
        if isinstance(group, dict) and isinstance(group.get("template"), dict):
            yield str(group.get("groupName", "")), group["template"]


@dataclass(frozen=True, slots=True)
class RayCluster(Workload):
    def templates(self, obj: dict[str, Any]) -> list[Template]:
        return list(ray_templates(spec_of(obj)))

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        return ("Running" if status.get("state") == "ready" else "Pending"), str(status.get("reason") or "")


ADAPTER = RayCluster(ray_cluster.KIND, KUBERAY)
