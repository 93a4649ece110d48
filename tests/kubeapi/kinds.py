"""The resource types the emulator serves, and the discovery documents that describe them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

HYPERNODE_GROUP = "topology.volcano.sh"
HYPERNODE_VERSION = "v1alpha1"
HYPERNODE_CRD = f"hypernodes.{HYPERNODE_GROUP}"
_COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()
    fields: frozenset[str] = _COMMON_FIELDS
    short_names: tuple[str, ...] = ()
    dns_label_names: bool = False  # services and namespaces: RFC 1123 label, else subdomain
    custom: bool = False  # a custom resource: no strategic merge, updates need a resourceVersion
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def name_problem(self, name: str) -> str | None:
        if self.dns_label_names:
            if len(name) > 63 or not _LABEL.match(name):
                return (
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                )
        elif len(name) > 253 or not _SUBDOMAIN.match(name):
            return (
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            )
        return None


POD_FIELDS = _COMMON_FIELDS | {
    "spec.nodeName",
    "spec.schedulerName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
}
EVENT_FIELDS = (
    _COMMON_FIELDS
    | {
        f"involvedObject.{f}"
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    }
    | {"reason", "reportingComponent", "source", "type"}
)

NAMESPACES = Kind(
    "",
    "v1",
    "namespaces",
    "Namespace",
    False,
    frozenset({"status"}),
    _COMMON_FIELDS | {"status.phase"},
    ("ns",),
    dns_label_names=True,
)
NODES = Kind(
    "", "v1", "nodes", "Node", False, frozenset({"status"}), _COMMON_FIELDS | {"spec.unschedulable"}, ("no",)
)
PODS = Kind(
    "", "v1", "pods", "Pod", True, frozenset({"status", "binding", "eviction", "log"}), POD_FIELDS, ("po",)
)
SERVICES = Kind(
    "", "v1", "services", "Service", True, frozenset({"status"}), short_names=("svc",), dns_label_names=True
)
CONFIGMAPS = Kind("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",))
SECRETS = Kind("", "v1", "secrets", "Secret", True, fields=_COMMON_FIELDS | {"type"})
PVCS = Kind(
    "",
    "v1",
    "persistentvolumeclaims",
    "PersistentVolumeClaim",
    True,
    frozenset({"status"}),
    short_names=("pvc",),
)
EVENTS = Kind("", "v1", "events", "Event", True, fields=EVENT_FIELDS, short_names=("ev",))
LEASES = Kind("coordination.k8s.io", "v1", "leases", "Lease", True)
EVENTS_V1 = Kind("events.k8s.io", "v1", "events", "Event", True, short_names=("ev",))
CRDS = Kind(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    False,
    frozenset({"status"}),
    short_names=("crd", "crds"),
)
HYPERNODES = Kind(
    HYPERNODE_GROUP,
    HYPERNODE_VERSION,
    "hypernodes",
    "HyperNode",
    False,
    frozenset({"status"}),
    short_names=("hn",),
    custom=True,
)

# Dynamic Resource Allocation, as Kubernetes 1.34 serves it (resource.k8s.io/v1).
RESOURCE_SLICES = Kind("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
DEVICE_CLASSES = Kind("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
RESOURCE_CLAIMS = Kind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, frozenset({"status"}))
RESOURCE_CLAIM_TEMPLATES = Kind("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True)
DRA = (RESOURCE_SLICES, DEVICE_CLASSES, RESOURCE_CLAIMS, RESOURCE_CLAIM_TEMPLATES)
BUILTIN: tuple[Kind, ...] = (
    NAMESPACES, NODES, PODS, SERVICES, CONFIGMAPS, SECRETS, PVCS, EVENTS, LEASES, EVENTS_V1, CRDS, *DRA
)  # fmt: skip
ALL: tuple[Kind, ...] = (*BUILTIN, HYPERNODES)


def hypernode_crd() -> dict[str, Any]:
    """The HyperNode CustomResourceDefinition as Volcano installs it (schema left open)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": HYPERNODE_CRD},
        "spec": {
            "group": HYPERNODE_GROUP,
            "names": {
                "kind": "HyperNode",
                "listKind": "HyperNodeList",
                "plural": "hypernodes",
                "singular": "hypernode",
                "shortNames": ["hn"],
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": HYPERNODE_VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                }
            ],
            "acceptedNames": {"kind": "HyperNode", "plural": "hypernodes"},
            "storedVersions": [HYPERNODE_VERSION],
        },
    }


def _resource_entries(kind: Kind) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [
        {
            "name": kind.plural,
            "singularName": kind.kind.lower(),
            "namespaced": kind.namespaced,
            "kind": kind.kind,
            "verbs": _VERBS,
            **({"shortNames": list(kind.short_names)} if kind.short_names else {}),
        }
    ]
    for sub in sorted(kind.subresources):
        if sub == "status":
            entries.append(
                {
                    "name": f"{kind.plural}/status",
                    "singularName": "",
                    "namespaced": kind.namespaced,
                    "kind": kind.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        elif sub == "binding":
            entries.append(
                {
                    "name": "pods/binding",
                    "singularName": "",
                    "namespaced": True,
                    "kind": "Binding",
                    "verbs": ["create"],
                }
            )
        elif sub == "eviction":
            entries.append(
                {
                    "name": "pods/eviction",
                    "singularName": "",
                    "namespaced": True,
                    "group": "policy",
                    "version": "v1",
                    "kind": "Eviction",
                    "verbs": ["create"],
                }
            )
    return entries


def resource_list(group_version: str, kinds: list[Kind]) -> dict[str, Any]:
    resources = [e for k in kinds if k.group_version == group_version for e in _resource_entries(k)]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _group_doc(group: str, version: str) -> dict[str, Any]:
    gv = {"groupVersion": f"{group}/{version}", "version": version}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


def api_group(group: str, kinds: list[Kind]) -> dict[str, Any] | None:
    versions = sorted({k.version for k in kinds if k.group == group})
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions[0])}


def group_list(kinds: list[Kind]) -> dict[str, Any]:
    groups = sorted({(k.group, k.version) for k in kinds if k.group})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_doc(g, v) for g, v in groups]}


def versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


VERSION_INFO = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-vglobal-emulator",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.24.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
