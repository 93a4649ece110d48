"""The workload kinds the emulator serves beside the core ones: apps/v1 Deployments, ReplicaSets and
StatefulSets and batch/v1 Jobs (always, as every API server has them), and the custom resources of
KubeRay (``ray.io/v1`` RayCluster, RayJob, RayService), LeaderWorkerSet
(``leaderworkerset.x-k8s.io/v1``), JobSet (``jobset.x-k8s.io/v1alpha2``), Kubeflow's training and
MPI operators (``kubeflow.org`` PyTorchJob, MPIJob), Trainer (``trainer.kubeflow.org`` TrainJob) and
Volcano's PodGroup (``scheduling.volcano.sh/v1beta1``, no controller: its pods are plain pods) and
AppWrapper (``workload.codeflare.dev/v1beta2``, a kind vglobal knows only by a KindDefinition)
and Kthena's ModelServing (``workload.serving.volcano.sh/v1alpha1``),
served only while their CustomResourceDefinition exists, as on a cluster where the operator's chart
installed it."""

from __future__ import annotations

from typing import Any

from tests.kubeapi.kinds import Kind

STATUS = frozenset({"status"})
RAY_GROUP, LWS_GROUP = "ray.io", "leaderworkerset.x-k8s.io"
JOBSET_GROUP, KUBEFLOW_GROUP, TRAINER_GROUP = "jobset.x-k8s.io", "kubeflow.org", "trainer.kubeflow.org"

DEPLOYMENTS = Kind("apps", "v1", "deployments", "Deployment", True, STATUS, short_names=("deploy",))
REPLICASETS = Kind("apps", "v1", "replicasets", "ReplicaSet", True, STATUS, short_names=("rs",))
STATEFULSETS = Kind("apps", "v1", "statefulsets", "StatefulSet", True, STATUS, short_names=("sts",))
JOBS = Kind("batch", "v1", "jobs", "Job", True, STATUS)
RAYCLUSTERS = Kind(RAY_GROUP, "v1", "rayclusters", "RayCluster", True, STATUS, custom=True)
RAYJOBS = Kind(RAY_GROUP, "v1", "rayjobs", "RayJob", True, STATUS, custom=True)
LEADERWORKERSETS = Kind(
    LWS_GROUP, "v1", "leaderworkersets", "LeaderWorkerSet", True, STATUS, short_names=("lws",), custom=True
)
RAYSERVICES = Kind(RAY_GROUP, "v1", "rayservices", "RayService", True, STATUS, custom=True)
JOBSETS = Kind(JOBSET_GROUP, "v1alpha2", "jobsets", "JobSet", True, STATUS, custom=True)
PYTORCHJOBS = Kind(KUBEFLOW_GROUP, "v1", "pytorchjobs", "PyTorchJob", True, STATUS, custom=True)
MPIJOBS = Kind(KUBEFLOW_GROUP, "v2beta1", "mpijobs", "MPIJob", True, STATUS, custom=True)
TRAINJOBS = Kind(TRAINER_GROUP, "v1alpha1", "trainjobs", "TrainJob", True, STATUS, custom=True)
# A custom resource vglobal has no code for, run through a KindDefinition (tests/fixtures/kinds).
APPWRAPPERS = Kind("workload.codeflare.dev", "v1beta2", "appwrappers", "AppWrapper", True, STATUS, custom=True)
MODELSERVINGS = Kind(
    "workload.serving.volcano.sh", "v1alpha1", "modelservings", "ModelServing", True, STATUS, custom=True
)
PODGROUPS = Kind(
    "scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True, STATUS, short_names=("pg",), custom=True
)

BUILTIN_WORKLOADS: tuple[Kind, ...] = (DEPLOYMENTS, REPLICASETS, STATEFULSETS, JOBS)
CUSTOM_WORKLOADS: tuple[Kind, ...] = (
    RAYCLUSTERS,
    RAYJOBS,
    LEADERWORKERSETS,
    RAYSERVICES,
    JOBSETS,
    PYTORCHJOBS,
    MPIJOBS,
    TRAINJOBS,
    PODGROUPS,
    APPWRAPPERS,
    MODELSERVINGS,
)


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
