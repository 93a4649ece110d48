"""What the agent's modules of Kubeflow's job kinds share: one template per replica type (the role
its lower-case name, as ``training.kubeflow.org/replica-type`` labels the pods); the run ends with
the job's ``Succeeded`` or ``Failed`` condition and runs with its ``Running`` one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Template, Workload, conditions, spec_of
from vglobal.agent.kube.kinds.job_set import ended

REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"


@dataclass(frozen=True, slots=True)
class ReplicaSpecs(Workload):
    field: str = ""  # pytorchReplicaSpecs, mpiReplicaSpecs
    types: tuple[str, ...] = ()  # the replica types, in the order the model reads them

    def templates(self, obj: dict[str, Any]) -> list[Template]:
        specs = spec_of(obj).get(self.field) or {}
        out = []
        for name in self.types:
            tmpl = (specs.get(name) or {}).get("template") if isinstance(specs, dict) else None
            if isinstance(tmpl, dict):
                out.append((name.lower(), tmpl))
        return out

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        end = ended(status, "Succeeded", "Failed")
        if end is not None:
            return end
        return ("Running" if "Running" in conditions(status) else "Pending"), ""
