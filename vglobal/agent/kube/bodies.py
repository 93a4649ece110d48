"""The objects the agent writes: the per-job owner ConfigMap, pods, plugin objects, bindings, events.

Every object of a job carries ``vglobal.io/job-uid`` and ``vglobal.io/generation`` and an owner
reference to the job's owner ConfigMap (no ``blockOwnerDeletion``: that would need ``update`` on
the owner's finalizers, which the agent's RBAC does not grant), so deleting that one object
removes everything the job made. The owner holds the job manifest, so a restarted agent can
rebuild its runs from the pods it labelled.
"""

from __future__ import annotations

import copy
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vglobal.agent.kube.records import GENERATION_LABEL, JOB_UID_LABEL, POD_UID_ANNOTATION
from vglobal.agent.pods import PodManifest
from vglobal.model.job import Job

MANAGED_BY = "app.kubernetes.io/managed-by"
AGENT = "vglobal-agent"
OWNER_SUFFIX = "-vglobal"
MANIFEST_KEY, QUEUE_KEY, PRIORITY_KEY = "job.json", "queue", "priority"


@dataclass(frozen=True, slots=True)
class JobRef:
    """What identifies one run of a job in the cluster."""

    uid: str
    generation: int
    namespace: str
    name: str

    @property
    def owner_name(self) -> str:
        return f"{self.name}{OWNER_SUFFIX}"

    def labels(self) -> dict[str, str]:
        return {
            JOB_UID_LABEL: self.uid,
            GENERATION_LABEL: str(self.generation),
            "volcano.sh/job-name": self.name,
            "volcano.sh/job-namespace": self.namespace,
            MANAGED_BY: AGENT,
        }


def owner_body(ref: JobRef, job: Job, queue: str, priority: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": ref.owner_name, "namespace": ref.namespace, "labels": ref.labels()},
        "data": {
            MANIFEST_KEY: json.dumps(job.raw, separators=(",", ":"), sort_keys=True),
            QUEUE_KEY: queue,
            PRIORITY_KEY: str(priority),
        },
    }


def owner_reference(ref: JobRef, owner_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": ref.owner_name,
        "uid": owner_uid,
        "controller": True,
    }


def pod_body(pod: PodManifest, ref: JobRef, owner_uid: str, scheduler_name: str) -> dict[str, Any]:
    # new dicts only where something changes: the body is serialised once and never mutated
    meta = dict(pod.obj.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **ref.labels()}
    meta["annotations"] = {**(meta.get("annotations") or {}), POD_UID_ANNOTATION: pod.uid}
    meta["ownerReferences"] = [owner_reference(ref, owner_uid)]
    # kube-scheduler and Volcano leave the pod to the agent
    spec = {**(pod.obj.get("spec") or {}), "schedulerName": scheduler_name}
    return {**pod.obj, "apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def object_body(obj: dict[str, Any], ref: JobRef, owner_uid: str) -> dict[str, Any]:
    """A job plugin's Service or ConfigMap, owned by the job's owner object."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta.setdefault("labels", {}).update(ref.labels())
    meta["ownerReferences"] = [owner_reference(ref, owner_uid)]
    return {"apiVersion": "v1", **out}


def binding_body(pod: str, pod_uid: str, node: str, annotations: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": pod}
    if pod_uid:
        meta["uid"] = pod_uid  # bind this incarnation only, as kube-scheduler's binder does
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_body(
    ref: JobRef, owner_uid: str, kind: str, reason: str, message: str, instance: str
) -> dict[str, Any]:
    """A core/v1 Event on the job's owner object (``kubectl describe configmap <job>-vglobal``)."""
    now = _now()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{ref.owner_name}.{secrets.token_hex(8)}", "namespace": ref.namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": ref.owner_name,
            "namespace": ref.namespace,
            "uid": owner_uid,
        },
        "type": kind,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": AGENT},
        "reportingComponent": "vglobal.io/agent",
        "reportingInstance": instance,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def namespace_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {MANAGED_BY: AGENT}},
    }


def delete_body(uid: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    if uid:
        body["preconditions"] = {"uid": uid}  # never the next incarnation that took the name
    return body
