"""TrainJob: no pod template of its own (its runtime holds it), so the agent labels the pods through
a runtime patch of its own (``manager: vglobal.io/agent``), as Kueue does with its own; Trainer lets a
patch set pod metadata but not ``schedulerName``, so the member cluster's runtime must name the
agent's scheduler. Ends with its ``Complete`` or ``Failed`` condition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.kinds.base import Workload
from vglobal.agent.kube.kinds.job_set import all_ready, ended
from vglobal.agent.kube.records import ROLE_LABEL
from vglobal.model.job import SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION
from vglobal.model.kinds import train_job
from vglobal.model.kinds.runtimes import NODE

MANAGER = "vglobal.io/agent"


@dataclass(frozen=True, slots=True)
class TrainJob(Workload):
    def roles(self, spec: Mapping[str, Any]) -> list[str]:
        return [NODE]

    def body(
        self, raw: Mapping[str, Any], ref: JobRef, owner_uid: str, scheduler_name: str
    ) -> dict[str, Any]:
        obj = Workload.body(self, raw, ref, owner_uid, scheduler_name)
        notes = obj["metadata"]["annotations"]
        pod_meta = {
            "labels": {**ref.labels(), ROLE_LABEL: NODE},
            "annotations": {
                k: v for k, v in notes.items() if k in (SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION)
            },
        }
        patch = {
            "manager": MANAGER,
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {"name": NODE, "template": {"spec": {"template": {"metadata": pod_meta}}}}
                        ]
                    }
                }
            },
        }
        spec = obj.setdefault("spec", {})
        patches = [
            p for p in spec.get("runtimePatches") or [] if isinstance(p, dict) and p.get("manager") != MANAGER
        ]
        spec["runtimePatches"] = [*patches, patch]
        return obj

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        end = ended(status, "Complete", "Failed")
        if end is not None:
            return end
        return ("Running" if all_ready(status.get("jobsStatus")) else "Pending"), ""


ADAPTER = TrainJob(
    train_job.KIND,
    "Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) with its runtimes, "
    "their node template naming the agent's scheduler",
)
