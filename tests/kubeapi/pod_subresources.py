"""pods/binding and pods/eviction, with the answers and refusals of the apiserver's pod storage."""

from __future__ import annotations

from typing import Any

from tests.kubeapi.clock import rfc3339
from tests.kubeapi.crud import Api, DeleteOptions
from tests.kubeapi.kinds import PODS
from tests.kubeapi.status import bad_request, conflict, invalid, success
from tests.kubeapi.store import Obj

BINDING = "pods/binding"


def _scheduled(status: Obj) -> Obj:
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": rfc3339()}
    )
    out = {**status, "conditions": conditions}
    out.pop("nominatedNodeName", None)
    return out


def bind(api: Api, namespace: str, name: str, body: Any) -> Obj:
    """Set spec.nodeName of an unassigned pod, merge the Binding's annotations; answer with a Status."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a Binding object")
    meta = body.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise bad_request("name in URL does not match name in Binding object")
    target = body.get("target") or {}
    if not target.get("name"):
        raise invalid("Binding", name, [("target.name", "FieldValueRequired", "Required value")])
    if target.get("kind") not in (None, "", "Node"):
        raise invalid(
            "Binding",
            name,
            [
                (
                    "target.kind",
                    "FieldValueNotSupported",
                    f'Unsupported value: "{target["kind"]}": supported values: "Node"',
                )
            ],
        )
    pod = api.get(PODS, namespace, name)
    pod_meta = pod["metadata"]
    if meta.get("uid") and meta["uid"] != pod_meta["uid"]:
        raise conflict(
            BINDING,
            name,
            f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: {pod_meta['uid']}",
        )
    if meta.get("resourceVersion") and meta["resourceVersion"] != pod_meta["resourceVersion"]:
        raise conflict(
            BINDING,
            name,
            "Precondition failed: ResourceVersion in precondition: "
            f"{meta['resourceVersion']}, ResourceVersion in object meta: {pod_meta['resourceVersion']}",
        )
    if pod_meta.get("deletionTimestamp"):
        raise conflict(BINDING, name, f"pod {name} is being deleted, cannot be assigned to a host")
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        raise conflict(BINDING, name, f'pod {name} is already assigned to node "{spec["nodeName"]}"')
    if spec.get("schedulingGates"):
        raise conflict(BINDING, name, f"pod {name} has non-empty .spec.schedulingGates")
    new_meta = dict(pod_meta)
    if meta.get("annotations"):
        new_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **meta["annotations"]}
    new = {
        **pod,
        "metadata": new_meta,
        "spec": {**spec, "nodeName": target["name"]},
        "status": _scheduled(pod.get("status") or {}),
    }
    api.write(PODS, pod, new)
    return success(201)


def evict(api: Api, namespace: str, name: str, body: Any) -> Obj:
    """policy/v1 Eviction: with no PodDisruptionBudgets every eviction is allowed and deletes the pod."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be an Eviction object")
    meta = body.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise bad_request("name in URL does not match name in Eviction object")
    api.get(PODS, namespace, name)
    api.delete(PODS, namespace, name, DeleteOptions.parse({}, body.get("deleteOptions")))
    return success(201)
