"""The workload kinds whose pods a controller in the member cluster makes (KubeRay's RayCluster and
RayJob, LeaderWorkerSet, Deployment, StatefulSet, batch/v1 Job): where they live in the API, the
object the agent writes for an admitted run, which of the object's pod templates a pod came from,
and what the object's status says about the run.

The agent writes the object itself, with every pod template set to its own ``schedulerName`` and
labelled with the run (job uid, generation, the template's role), so the pods those controllers make
wait for the agent, which binds them as the gang it planned (as Volcano does for these kinds).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from vglobal.agent.kube.api import ApiError, KubeApi
from vglobal.agent.kube.bodies import JobRef, owner_reference
from vglobal.agent.kube.records import GENERATION_LABEL, JOB_UID_LABEL, ROLE_LABEL
from vglobal.model.job import SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION
from vglobal.model.served import MISSING, SERVED, served_label
from vglobal.model.workloads import default_submitter

log = logging.getLogger(__name__)

SUBMITTER = "submitter"


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    api_version: str
    kind: str
    plural: str
    needs: str  # what must be installed in the member cluster for the kind to be served
    crd: str = ""  # its CustomResourceDefinition ("" for a kind every API server has)

    @property
    def group(self) -> str:
        return self.api_version.split("/", 1)[0]

    @property
    def version(self) -> str:
        return self.api_version.split("/", 1)[1]

    @property
    def resource(self) -> str:
        """``<plural>.<group>``, as model/served.py names it."""
        return f"{self.plural}.{self.group}"

    @property
    def api_path(self) -> str:
        return f"/apis/{self.api_version}"

    @property
    def all_namespaces(self) -> str:
        return f"{self.api_path}/{self.plural}"

    def collection(self, namespace: str) -> str:
        return f"{self.api_path}/namespaces/{quote(namespace, safe='')}/{self.plural}"

    def item(self, namespace: str, name: str) -> str:
        return f"{self.collection(namespace)}/{quote(name, safe='')}"


KUBERAY = "KubeRay >= 1.5.1 (ray.io/v1 CRDs and its operator)"
LWS = "the LeaderWorkerSet controller (leaderworkerset.x-k8s.io/v1)"
KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind("ray.io/v1", "RayCluster", "rayclusters", KUBERAY, "rayclusters.ray.io"),
    WorkloadKind("ray.io/v1", "RayJob", "rayjobs", KUBERAY, "rayjobs.ray.io"),
    WorkloadKind(
        "leaderworkerset.x-k8s.io/v1",
        "LeaderWorkerSet",
        "leaderworkersets",
        LWS,
        "leaderworkersets.leaderworkerset.x-k8s.io",
    ),
    WorkloadKind("apps/v1", "Deployment", "deployments", "nothing (apps/v1)"),
    WorkloadKind("apps/v1", "StatefulSet", "statefulsets", "nothing (apps/v1)"),
    WorkloadKind("batch/v1", "Job", "jobs", "nothing (batch/v1)"),
)
_BY_TYPE = {(k.api_version, k.kind): k for k in KINDS}


def kind_of(raw: Mapping[str, Any]) -> WorkloadKind | None:
    """The workload kind of a manifest; None for a Volcano Job (the agent makes its pods)."""
    return _BY_TYPE.get((str(raw.get("apiVersion", "")), str(raw.get("kind", ""))))


def _dig(obj: Any, *keys: str) -> Any:
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def _ray_templates(cluster_spec: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    head = _dig(cluster_spec, "headGroupSpec", "template")
    if isinstance(head, dict):
        yield "head", head
    for group in _dig(cluster_spec, "workerGroupSpecs") or []:
        if isinstance(group, dict) and isinstance(group.get("template"), dict):
            yield str(group.get("groupName", "")), group["template"]


def templates(kind: WorkloadKind, obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(role, pod template) of each template the kind's controller makes pods from, in manifest
    order; the templates are those inside ``obj`` (changing them changes ``obj``)."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if kind.kind == "RayCluster":
        return list(_ray_templates(spec))
    if kind.kind == "RayJob":
        out = list(_ray_templates(spec.get("rayClusterSpec")))
        if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
            if not isinstance(spec.get("submitterPodTemplate"), dict):
                submitter = default_submitter(spec.get("rayClusterSpec"))
                # The run's end is the submitter's: a simulated run's length goes on its pod.
                notes = _dig(obj, "metadata", "annotations") or {}
                sim = {
                    k: v for k, v in notes.items() if k in (SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION)
                }
                if sim:
                    submitter["metadata"] = {"annotations": sim}
                spec["submitterPodTemplate"] = submitter
            out.append((SUBMITTER, spec["submitterPodTemplate"]))
        return out
    if kind.kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") if isinstance(spec.get("leaderWorkerTemplate"), dict) else {}
        assert isinstance(lwt, dict)
        out = []
        if isinstance(lwt.get("leaderTemplate"), dict):
            out.append(("leader", lwt["leaderTemplate"]))
        if isinstance(lwt.get("workerTemplate"), dict):
            out.append(("worker", lwt["workerTemplate"]))
        return out
    tmpl = spec.get("template")
    return [("main", tmpl)] if isinstance(tmpl, dict) else []


def lws_size(raw: Mapping[str, Any]) -> int:
    """Pods per LeaderWorkerSet group (leader included); 1 when unset, as the API defaults it."""
    size = _dig(raw, "spec", "leaderWorkerTemplate", "size")
    return size if isinstance(size, int) and size > 0 else 1


def workload_body(
    kind: WorkloadKind, raw: Mapping[str, Any], ref: JobRef, owner_uid: str, scheduler_name: str
) -> dict[str, Any]:
    """The object to create: the manifest, owned by the run's owner ConfigMap (so deleting that
    removes everything), labelled with the run, each pod template set to the agent's scheduler."""
    obj = copy.deepcopy(dict(raw))
    obj.pop("status", None)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    obj["metadata"] = {
        "name": ref.name,
        "namespace": ref.namespace,
        "labels": {**(meta.get("labels") or {}), **ref.labels()},
        "annotations": dict(meta.get("annotations") or {}),
        "ownerReferences": [owner_reference(ref, owner_uid)],
    }
    for role, tmpl in templates(kind, obj):
        tmeta = tmpl.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), **ref.labels(), ROLE_LABEL: role}
        tmpl.setdefault("spec", {})["schedulerName"] = scheduler_name
    return obj


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    """A workload object as the agent follows it."""

    kind: str
    namespace: str
    name: str
    uid: str
    job_uid: str
    generation: int
    phase: str  # Pending | Running | Succeeded | Failed
    message: str = ""
    deleting: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


def _conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        str(c.get("type")): c
        for c in status.get("conditions") or []
        if isinstance(c, Mapping) and c.get("status") == "True"
    }


def phase_of(kind: str, obj: Mapping[str, Any]) -> tuple[str, str]:
    """(phase, message) the object's status says: Running when the controller reports it ready,
    Succeeded / Failed when it ended (RayJob, Job)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if kind == "RayCluster":
        return ("Running" if status.get("state") == "ready" else "Pending"), str(status.get("reason") or "")
    if kind == "RayJob":
        job_status, deployment = status.get("jobStatus"), status.get("jobDeploymentStatus")
        message = str(status.get("message") or "")
        if job_status == "SUCCEEDED":
            return "Succeeded", message
        if job_status == "FAILED" or deployment in ("Failed", "ValidationFailed"):
            return "Failed", message or f"RayJob {deployment or job_status}"
        return ("Running" if deployment == "Running" else "Pending"), message
    if kind == "Job":
        conds = _conditions(status)
        if "Complete" in conds:
            return "Succeeded", ""
        if "Failed" in conds:
            c = conds["Failed"]
            return "Failed", f"{c.get('reason', '')}: {c.get('message', '')}".strip(": ")
        return ("Running" if int(status.get("active") or 0) > 0 else "Pending"), ""
    want = spec.get("replicas")
    want = 1 if want is None else int(want)
    ready = int(status.get("readyReplicas") or 0)
    return ("Running" if ready >= want else "Pending"), ""


def record_of(kind: str) -> Callable[[dict[str, Any]], WorkloadRecord]:
    """The informer's converter for one kind."""

    def convert(obj: dict[str, Any]) -> WorkloadRecord:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        phase, message = phase_of(kind, obj)
        try:
            generation = int(labels.get(GENERATION_LABEL) or 0)
        except ValueError:
            generation = 0
        return WorkloadRecord(
            kind=kind,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            job_uid=str(labels.get(JOB_UID_LABEL) or ""),
            generation=generation,
            phase=phase,
            message=message,
            deleting=bool(meta.get("deletionTimestamp")),
        )

    return convert


def served(api: KubeApi) -> tuple[list[WorkloadKind], list[WorkloadKind]]:
    """(served, missing) workload kinds, by API discovery: a custom kind is served only while its
    CRD is installed (the controller behind it cannot be seen from the API; the README says what
    each kind needs)."""
    found: dict[str, set[str]] = {}
    ok: list[WorkloadKind] = []
    missing: list[WorkloadKind] = []
    for kind in KINDS:
        if not kind.crd:
            ok.append(kind)
            continue
        if kind.api_version not in found:
            try:
                doc = api.request("GET", kind.api_path, timeout=(5.0, 10.0))
                found[kind.api_version] = {str(r.get("name")) for r in doc.get("resources") or []}
            except ApiError as exc:
                if exc.status != 404:
                    log.warning("cannot read API discovery of %s: %s", kind.api_version, exc)
                found[kind.api_version] = set()
        (ok if kind.plural in found[kind.api_version] else missing).append(kind)
    return ok, missing


def served_labels(ok: list[WorkloadKind], missing: list[WorkloadKind]) -> dict[str, str]:
    """Cluster labels that tell the hub (and its users) which kinds this cluster can run."""
    out = {served_label(k.resource): SERVED for k in ok}
    out.update({served_label(k.resource): MISSING for k in missing})
    return out
