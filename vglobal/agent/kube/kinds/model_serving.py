"""Kthena's ModelServing: each role's entry template (role ``<role>``) and worker template (role
``<role>-worker``) of its ServingGroup template; Running once Kthena says it is ``Available`` or
all its ServingGroups are (``availableReplicas``). A ServingGroup's pods are placed as one gang."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Template, Workload, conditions, dig, spec_of
from vglobal.model.kinds import model_serving


@dataclass(frozen=True, slots=True)
class ModelServing(Workload):
    def templates(self, obj: dict[str, Any]) -> list[Template]:
        out: list[Template] = []
        for role in dig(spec_of(obj), "template", "roles") or []:
            if not isinstance(role, dict):
                continue
            name = str(role.get("name") or "")
            if isinstance(role.get("entryTemplate"), dict):
                out.append((name, role["entryTemplate"]))
            if role.get("workerReplicas") and isinstance(role.get("workerTemplate"), dict):
                out.append((f"{name}-worker", role["workerTemplate"]))
        return out

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        want = spec_of(obj).get("replicas")
        want = 1 if want is None else int(want)
        ready = "Available" in conditions(status) or int(status.get("availableReplicas") or 0) >= want
        return ("Running" if ready else "Pending"), ""


ADAPTER = ModelServing(
    model_serving.KIND, "Kthena's ModelServing controller and CRD (workload.serving.volcano.sh/v1alpha1)"
)
