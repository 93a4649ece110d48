"""A plain Pod: the object the agent writes is the pod itself (its own template, role ``main``),
which the agent binds as it binds a controller's pods. Its informer sees only pods written so
(``vglobal.io/workload-kind: Pod``), not the pods of other runs. Ends as the pod does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.kinds.base import Template, Workload
from vglobal.model.kinds import pod

KIND_LABEL = "vglobal.io/workload-kind"


@dataclass(frozen=True, slots=True)
class Pod(Workload):
    @property
    def api_path(self) -> str:
        return "/api/v1"

    @property
    def selector(self) -> str:
        return f"{super(Pod, self).selector},{KIND_LABEL}={self.kind}"

    def templates(self, obj: dict[str, Any]) -> list[Template]:
        return [("main", obj)] if isinstance(obj.get("spec"), dict) else []

    def roles(self, spec: Mapping[str, Any]) -> list[str]:
        return ["main"]

    def body(
        self, raw: Mapping[str, Any], ref: JobRef, owner_uid: str, scheduler_name: str
    ) -> dict[str, Any]:
        obj = Workload.body(self, raw, ref, owner_uid, scheduler_name)
        obj["metadata"]["labels"][KIND_LABEL] = self.kind
        return obj

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        phase = str(status.get("phase") or "Pending")
        if phase in ("Succeeded", "Failed", "Running"):
            return phase, str(status.get("message") or status.get("reason") or "")
        return "Pending", ""


ADAPTER = Pod(pod.KIND, "nothing (v1)", builtin=True)
