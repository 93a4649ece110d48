"""A job written as a workload object (a RayCluster, a LeaderWorkerSet...) goes only to clusters
whose agent did not say the kind is missing there; when none is left, the reason names the kind
and the clusters that lack it."""

from __future__ import annotations

from tests.unit.admission.builders import admitted, cluster, gpus, job, reason
from vglobal.admission import QueueSnap, Snapshot, admit
from vglobal.model.forms import Placement
from vglobal.model.job import Job
from vglobal.model.served import resource_of

Q = (QueueSnap("q"),)
RAY = "workloads.vglobal.io/rayclusters.ray.io"


def test_a_cluster_whose_label_says_the_kind_is_missing_is_passed_over() -> None:
    # both empty, so the name orders them: "a" comes first but lacks KubeRay; "b" says nothing of
    # it (a simulated cluster), so it is not known to lack it
    clusters = (cluster("a", 1, gpus(8), {RAY: "missing"}), cluster("b", 1, gpus(8)))
    ray = job("ray", "q", gpus(8), workload="rayclusters.ray.io")
    volcano = job("vc", "q", gpus(8), created=1)
    result = admit(Snapshot(0, Q, clusters, (ray, volcano)))
    assert admitted(result) == {"ray": "b", "vc": "a"}


def test_when_only_clusters_lacking_the_kind_are_left_the_reason_names_it() -> None:
    clusters = (cluster("a", 2, gpus(8), {RAY: "missing"}), cluster("b", 1, gpus(8), {RAY: "served"}))
    result = admit(
        Snapshot(0, Q, clusters, (job("ray", "q", gpus(8), pods=2, workload="rayclusters.ray.io"),))
    )
    assert not admitted(result)
    assert reason(result, "ray") == (
        "no cluster fits gang: 2 pods x {nvidia.com/gpu: 8}; best: b can hold 1 of the 2 pods "
        "(1 nodes have {nvidia.com/gpu: 8} free), lacks {nvidia.com/gpu: 8} in total; a does not "
        f"serve rayclusters.ray.io (cluster label {RAY}=missing: its CRD and controller are not "
        "installed there)"
    )
    alone = (cluster("a", 2, gpus(8), {RAY: "missing"}),)
    result = admit(Snapshot(0, Q, alone, (job("ray", "q", gpus(8), workload="rayclusters.ray.io"),)))
    assert reason(result, "ray").endswith(
        "; no candidate cluster; a does not serve rayclusters.ray.io (cluster label "
        f"{RAY}=missing: its CRD and controller are not installed there)"
    )


def test_the_placement_kept_for_a_job_names_its_workload_resource() -> None:
    raw = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"}
    job_ = Job(name="lws", namespace="default", min_available=0, scheduler_name=None, tasks=(), raw=raw)
    placement = Placement.of(job_)
    assert placement.workload == "leaderworkersets.leaderworkerset.x-k8s.io"
    assert Placement.from_json(placement.to_json()) == placement
    volcano = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}
    assert resource_of(volcano) == "" and "workload" not in Placement().to_json()
    assert resource_of({"apiVersion": "batch/v1", "kind": "Job"}) == "jobs.batch"
