"""The workload kinds the emulator serves beside the core ones: apps/v1 Deployments, ReplicaSets and
StatefulSets and batch/v1 Jobs (always, as every API server has them), and the custom resources of
KubeRay (``ray.io/v1`` RayCluster, RayJob) and LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``),
served only while their CustomResourceDefinition exists, as on a cluster where the operator's chart
installed it."""

from __future__ import annotations

from typing import Any

from tests.kubeapi.kinds import Kind

STATUS = frozenset({"status"})
RAY_GROUP, LWS_GROUP = "ray.io", "leaderworkerset.x-k8s.io"

DEPLOYMENTS = Kind("apps", "v1", "deployments", "Deployment", True, STATUS, short_names=("deploy",))
REPLICASETS = Kind("apps", "v1", "replicasets", "ReplicaSet", True, STATUS, short_names=("rs",))
STATEFULSETS = Kind("apps", "v1", "statefulsets", "StatefulSet", True, STATUS, short_names=("sts",))
JOBS = Kind("batch", "v1", "jobs", "Job", True, STATUS)
RAYCLUSTERS = Kind(RAY_GROUP, "v1", "rayclusters", "RayCluster", True, STATUS, custom=True)
RAYJOBS = Kind(RAY_GROUP, "v1", "rayjobs", "RayJob", True, STATUS, custom=True)
LEADERWORKERSETS = Kind(
    LWS_GROUP, "v1", "leaderworkersets", "LeaderWorkerSet", True, STATUS, short_names=("lws",), custom=True
)

BUILTIN_WORKLOADS: tuple[Kind, ...] = (DEPLOYMENTS, REPLICASETS, STATEFULSETS, JOBS)
CUSTOM_WORKLOADS: tuple[Kind, ...] = (RAYCLUSTERS, RAYJOBS, LEADERWORKERSETS)


def crd_name(kind: Kind) -> str:
    return f"{kind.plural}.{kind.group}"


def crd_doc(kind: Kind) -> dict[str, Any]:
    """A CustomResourceDefinition as an operator's chart installs it (schema left open)."""
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.kind.lower(),
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name(kind)},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [
                {
                    "name": kind.version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                    "subresources": {"status": {}} if kind.has_status else {},
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
            "acceptedNames": {"kind": kind.kind, "plural": kind.plural},
            "storedVersions": [kind.version],
        },
    }
