"""RayJob: its Ray cluster's templates plus the submitter's in K8sJobMode; ends as ``jobStatus``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Template, Workload, dig, spec_of
from vglobal.agent.kube.kinds.ray_cluster import KUBERAY, ray_templates
from vglobal.model.job import SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION
from vglobal.model.kinds import ray_job
from vglobal.model.kinds.reading import SUBMITTER, default_submitter


@dataclass(frozen=True, slots=True)
class RayJob(Workload):
    def templates(self, obj: dict[str, Any]) -> list[Template]:
        """KubeRay's default submitter is written into the object, so its pod is labelled too."""
        spec = spec_of(obj)
        out = list(ray_templates(spec.get("rayClusterSpec")))
        if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
            if not isinstance(spec.get("submitterPodTemplate"), dict):
                submitter = default_submitter(spec.get("rayClusterSpec"))
                # The run's end is the submitter's: a simulated run's length goes on its pod.
                notes = dig(obj, "metadata", "annotations") or {}
                sim = {
                    k: v for k, v in notes.items() if k in (SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION)
                }
                if sim:
                    submitter["metadata"] = {"annotations": sim}
                spec["submitterPodTemplate"] = submitter
            out.append((SUBMITTER, spec["submitterPodTemplate"]))
        return out

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        job_status, deployment = status.get("jobStatus"), status.get("jobDeploymentStatus")
        message = str(status.get("message") or "")
        if job_status == "SUCCEEDED":
            return "Succeeded", message
        if job_status == "FAILED" or deployment in ("Failed", "ValidationFailed"):
            return "Failed", message or f"RayJob {deployment or job_status}"
        return ("Running" if deployment == "Running" else "Pending"), message


ADAPTER = RayJob(ray_job.KIND, KUBERAY)
