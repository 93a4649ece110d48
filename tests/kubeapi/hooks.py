"""What particular kinds add to the generic verbs: pod defaults, validation and immutable spec, pod
grace periods, service cluster IPs, namespace phases."""

from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING, Any

from tests.kubeapi.hooks_data import ClaimHooks, DataHooks
from tests.kubeapi.kinds import CONFIGMAPS, NAMESPACES, PODS, PVCS, SECRETS, SERVICES, Kind
from tests.kubeapi.status import invalid

if TYPE_CHECKING:
    from tests.kubeapi.crud import Api

Obj = dict[str, Any]
DEFAULT_GRACE_SECONDS = 30
FINISHED = ("Succeeded", "Failed")
_MUTABLE_POD_SPEC = (
    "activeDeadlineSeconds",
    "tolerations",
    "schedulingGates",
    "terminationGracePeriodSeconds",
)
_IMMUTABLE_SPEC_MESSAGE = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
    "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)"
)


class KindHooks:
    def on_create(self, api: Api, obj: Obj) -> Obj:
        return obj

    def on_update(self, api: Api, old: Obj, new: Obj) -> Obj:
        return new

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        return 0


def _qos(containers: list[Obj]) -> str:
    requests_seen = limits_equal = False
    all_guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        requests_seen = requests_seen or bool(req) or bool(lim)
        limits_equal = all(k in lim for k in ("cpu", "memory")) and all(
            req.get(k, lim[k]) == lim[k] for k in lim
        )
        all_guaranteed = all_guaranteed and limits_equal
    if not requests_seen:
        return "BestEffort"
    return "Guaranteed" if all_guaranteed else "Burstable"


def _container_defaults(c: Obj) -> Obj:
    image = str(c.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    pull = "Always" if ":" not in tag or tag.endswith(":latest") else "IfNotPresent"
    return {
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": pull,
        "resources": {},
        **c,
    }


CONTAINER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")  # a DNS-1123 label


class PodHooks(KindHooks):
    def on_create(self, api: Api, obj: Obj) -> Obj:
        spec = obj.get("spec") or {}
        name = obj["metadata"]["name"]
        containers = spec.get("containers") or []
        causes = []
        if not containers:
            causes.append(("spec.containers", "FieldValueRequired", "Required value"))
        for i, c in enumerate(containers):
            if not c.get("name"):
                causes.append((f"spec.containers[{i}].name", "FieldValueRequired", "Required value"))
            elif len(str(c["name"])) > 63 or not CONTAINER_NAME.match(str(c["name"])):
                causes.append(
                    (
                        f"spec.containers[{i}].name",
                        "FieldValueInvalid",
                        f'Invalid value: "{c["name"]}": a lowercase RFC 1123 label must consist of lower '
                        "case alphanumeric characters or '-', and must start and end with an alphanumeric "
                        "character",
                    )
                )
            if not c.get("image"):
                causes.append((f"spec.containers[{i}].image", "FieldValueRequired", "Required value"))
        if causes:
            raise invalid("Pod", name, causes)
        spec = {
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": DEFAULT_GRACE_SECONDS,
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "enableServiceLinks": True,
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            **spec,
            "containers": [_container_defaults(c) for c in containers],
        }
        status: Obj = {"phase": "Pending", "qosClass": _qos(containers)}
        if spec.get("nodeName"):
            status["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": obj["metadata"]["creationTimestamp"],
                }
            ]
        return {**obj, "spec": spec, "status": status}

    def on_update(self, api: Api, old: Obj, new: Obj) -> Obj:
        def comparable(spec: Obj) -> Obj:
            out = {k: v for k, v in spec.items() if k not in _MUTABLE_POD_SPEC}
            for field in ("containers", "initContainers"):
                if field in out:
                    out[field] = [{k: v for k, v in c.items() if k != "image"} for c in out[field]]
            return out

        if comparable(old.get("spec") or {}) != comparable(new.get("spec") or {}):
            raise invalid(
                "Pod", old["metadata"]["name"], [("spec", "FieldValueForbidden", _IMMUTABLE_SPEC_MESSAGE)]
            )
        gates = [g.get("name") for g in (old.get("spec") or {}).get("schedulingGates") or []]
        if any(g.get("name") not in gates for g in (new.get("spec") or {}).get("schedulingGates") or []):
            why = "only deletion is allowed, but found new scheduling gate"
            raise invalid("Pod", old["metadata"]["name"], [("spec.schedulingGates", "FieldValueForbidden", why)])
        return new

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """A pod no kubelet runs (unbound or finished) goes at once; else its grace period applies."""
        if not (obj.get("spec") or {}).get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in FINISHED:
            return 0
        if requested is not None:
            return max(0, requested)
        return int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))


class ServiceHooks(KindHooks):
    def __init__(self) -> None:
        self._ips = itertools.count(10)

    def on_create(self, api: Api, obj: Obj) -> Obj:
        spec = dict(obj.get("spec") or {})
        spec.setdefault("type", "ClusterIP")
        spec["ports"] = [
            {
                "protocol": "TCP",
                **p,
                **({"targetPort": p["port"]} if "targetPort" not in p and "port" in p else {}),
            }
            for p in spec.get("ports") or []
        ]
        if not spec.get("clusterIP"):
            n = next(self._ips)
            spec["clusterIP"] = f"10.96.{n // 250}.{n % 250 + 1}"
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("sessionAffinity", "None")
        return {**obj, "spec": spec, "status": {"loadBalancer": {}}}


class NamespaceHooks(KindHooks):
    def on_create(self, api: Api, obj: Obj) -> Obj:
        labels = {
            **(obj["metadata"].get("labels") or {}),
            "kubernetes.io/metadata.name": obj["metadata"]["name"],
        }
        return {
            **obj,
            "metadata": {**obj["metadata"], "labels": labels},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }


_DEFAULT = KindHooks()
_BY_KIND: dict[Kind, KindHooks] = {
    PODS: PodHooks(),
    SERVICES: ServiceHooks(),
    NAMESPACES: NamespaceHooks(),
    CONFIGMAPS: DataHooks("ConfigMap"),  # type: ignore[dict-item]
    SECRETS: DataHooks("Secret"),  # type: ignore[dict-item]
    PVCS: ClaimHooks(),  # type: ignore[dict-item]
}


def for_kind(kind: Kind) -> KindHooks:
    return _BY_KIND.get(kind, _DEFAULT)
