"""RayService: its Ray cluster's templates (``rayClusterConfig``); Running once KubeRay says it is
``Ready`` (or, in older releases, ``serviceStatus: Running``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Template, Workload, conditions, spec_of
from vglobal.agent.kube.kinds.ray_cluster import KUBERAY, ray_templates
from vglobal.model.kinds import ray_service


@dataclass(frozen=True, slots=True)
class RayService(Workload):
    def templates(self, obj: dict[str, Any]) -> list[Template]:
        return list(ray_templates(spec_of(obj).get("rayClusterConfig")))

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        ready = "Ready" in conditions(status) or status.get("serviceStatus") == "Running"
        return ("Running" if ready else "Pending"), ""


ADAPTER = RayService(ray_service.KIND, KUBERAY)
