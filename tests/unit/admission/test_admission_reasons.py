"""Wait reasons that point the right way: the best candidate named is the cluster closest to
holding the gang on the resources it asks for."""

from __future__ import annotations

from tests.unit.admission.builders import cluster, gpus, job, reason, res
from vglobal.admission import ClusterSnap, NodeSnap, QueueSnap, Snapshot, admit
from vglobal.model.resources import ResourceVector

Q = (QueueSnap("q"),)


def busy_gpus(name: str, nodes: int, free_gpus: int) -> ClusterSnap:
    """Nodes of 32 cpu and 8 GPUs, all cpu free and ``free_gpus`` GPUs free on each."""
    return ClusterSnap(
        name, {}, tuple(NodeSnap(f"{name}-n{i}", res(32, free_gpus), res(32, 8)) for i in range(nodes))
    )


def test_a_gpu_gang_is_never_told_a_cpu_only_cluster_is_its_best() -> None:
    # Neither cluster holds a pod now; cpu-central comes first by name but has no GPU at all.
    clusters = (cluster("cpu-central", 4, res(cpu=64)), busy_gpus("gpu-west", 4, 0))
    result = admit(Snapshot(0, Q, clusters, (job("j", "q", res(4, 8), pods=4),)))
    assert "best: gpu-west can hold 0 of the 4 pods" in reason(result, "j")


def test_a_cluster_holding_the_gangs_cpu_pod_does_not_outrank_one_with_its_gpus() -> None:
    # The launcher pod fits cpu-central now (1 pod held), the GPU workers nowhere: the cluster with
    # GPUs is still the closer one.
    launcher = ResourceVector({"cpu": 2_000})
    pending = job("j", "q", res(4, 8), pods=4)
    pending = type(pending)(
        **{**pending.__dict__, "gang": ((launcher, 1), (res(4, 8), 4)), "request": res(18, 32)}
    )
    clusters = (cluster("cpu-central", 4, res(cpu=64)), busy_gpus("gpu-west", 4, 0))
    got = reason(admit(Snapshot(0, Q, clusters, (pending,))), "j")
    assert "best: gpu-west can hold 0 of the 5 pods" in got


def test_among_clusters_holding_no_pod_the_one_with_more_of_the_scarcest_ask_free_is_best() -> None:
    # 2 pods x 8 GPUs: gpu-a has 4 GPUs free in all, gpu-b 12 (3 on each node); neither holds a pod.
    clusters = (busy_gpus("gpu-a", 4, 0), busy_gpus("gpu-b", 4, 3))
    clusters = (replace_node(clusters[0], 0, res(32, 4)), clusters[1])
    result = admit(Snapshot(0, Q, clusters, (job("j", "q", gpus(8), pods=2),)))
    assert "best: gpu-b can hold 0 of the 2 pods" in reason(result, "j")


def replace_node(c: ClusterSnap, i: int, free: ResourceVector) -> ClusterSnap:
    nodes = list(c.nodes)
    nodes[i] = NodeSnap(nodes[i].name, free, nodes[i].allocatable)
    return ClusterSnap(c.name, c.labels, tuple(nodes), c.schedulable)
