"""Wait reasons that point the right way: the best candidate named is the cluster closest to
holding the gang on the resources it asks for; a pod no node could ever hold says so; jobs are named by namespace/name."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import cluster, gpus, job, reason, res
from vglobal.admission import Admit, ClusterSnap, NodeSnap, QueueSnap, RunningJob, Snapshot, Wait, admit
from vglobal.hub.dispatch.metrics import waiting_counts
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import ResourceVector
from vglobal.sim.rounds import AdmissionRounds

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
    pending = replace(pending, gang=((launcher, 1), (res(4, 8), 4)), request=res(18, 32))
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


# --- a pod no node could ever hold -------------------------------------------------------------
def test_a_pod_bigger_than_every_node_of_every_ready_cluster_never_fits_and_says_so() -> None:
    # 16 GPUs per pod; every node of east and west has 8. A cordoned cluster with 16-GPU nodes is
    # no candidate today.
    clusters = (
        cluster("east", 4, gpus(8)),
        cluster("west", 2, gpus(8)),
        cluster("big", 2, gpus(16), schedulable=False),
    )
    result = admit(Snapshot(0, Q, clusters, (job("j", "q", gpus(16), pods=2),)))
    d = result.decisions["j"]
    assert isinstance(d, Wait) and d.kind == WaitKind.NeverFits
    assert d.reason == (
        "can never fit today: needs 16 nvidia.com/gpu per pod, the largest node has 8; "
        "gang: 2 pods x {nvidia.com/gpu: 16}"
    )
    # the hub's gauge vglobal_queue_never_fit_jobs counts it
    assert waiting_counts(Snapshot(0, Q, clusters, (job("j", "q", gpus(16), pods=2),)), result)[1] == {"q": 1}


def test_a_full_cluster_is_no_fit_not_never_fit() -> None:
    clusters = (busy_gpus("gpu-west", 2, 0),)
    result = admit(Snapshot(0, Q, clusters, (job("j", "q", gpus(8)),)))
    d = result.decisions["j"]
    assert isinstance(d, Wait) and d.kind == WaitKind.NoFit


def test_never_fit_is_judged_on_the_clusters_the_job_may_use_and_a_starving_job_says_it_too() -> None:
    # big's nodes hold the pod, but the job may go only to small; it has waited past starvation.
    clusters = (cluster("big", 1, res(64, 16)), cluster("small", 2, res(64, 8)))
    pending = job("j", "q", res(4, 16), allowed_clusters=frozenset({"small"}), waiting_since=-10_000)
    result = admit(Snapshot(0, Q, clusters, (pending,)))
    d = result.decisions["j"]
    assert isinstance(d, Wait) and d.kind == WaitKind.NeverFits
    assert d.reason.startswith("can never fit today: needs 16 nvidia.com/gpu per pod, the largest node has 8")
    anywhere = admit(Snapshot(0, Q, clusters, (replace(pending, allowed_clusters=None),)))
    assert not isinstance(anywhere.decisions["j"], Wait)


def test_a_pod_no_node_holds_all_of_at_once_never_fits() -> None:
    # one node has the GPUs, another the cpu: no node has both
    clusters = (
        ClusterSnap("c", {}, (NodeSnap("a", res(8, 16), res(8, 16)), NodeSnap("b", res(96, 0), res(96, 0)))),
    )
    result = admit(Snapshot(0, Q, clusters, (job("j", "q", res(64, 16)),)))
    assert reason(result, "j").startswith(
        "can never fit today: needs {cpu: 64, nvidia.com/gpu: 16} per pod, no node has all of it at once"
    )


# --- jobs named as every command takes them ----------------------------------------------------
def _full(name: str) -> ClusterSnap:
    cpu4 = ResourceVector({"cpu": 4_000})
    return ClusterSnap(name, {}, (NodeSnap(f"{name}-n0", ResourceVector({"cpu": 0}), cpu4),))


def _victim(queue: str, priority: int = 0) -> RunningJob:
    cpu4 = ResourceVector({"cpu": 4_000})
    return RunningJob(
        uid="be1dec67-0000",
        queue=queue,
        cluster="c",
        priority=priority,
        created=0.0,
        request=cpu4,
        placements={"c-n0": cpu4},
        running_since=0.0,
        namespace="default",
        name="train-3",
    )


def test_a_preemption_names_its_victim_and_preemptor_by_namespace_and_name() -> None:
    pending = replace(
        job("a7f3-0000", "q", ResourceVector({"cpu": 4_000}), priority=100), name="big", namespace="ml"
    )
    result = admit(Snapshot(0, Q, (_full("c"),), (pending,), (_victim("q"),)))
    d = result.decisions["a7f3-0000"]
    assert isinstance(d, Admit) and "evicting job default/train-3;" in d.preempting
    (taken,) = result.reclaims
    assert taken.victim_uid == "be1dec67-0000"  # what the hub acts on stays the uid
    assert "for job ml/big of priority 100" in taken.reason and "0000" not in taken.reason


def test_a_reclaim_names_its_victims_and_reclaimer_by_namespace_and_name() -> None:
    # a alone deserves everything and fills c; b arrives: a's newest job (uid a3) is reclaimed
    first = [job(f"a{i}", "a", gpus(8), created=i) for i in range(4)]
    first[3] = replace(first[3], name="train-3", namespace="default")
    sim = AdmissionRounds.of([QueueSnap("a"), QueueSnap("b")], [cluster("c", 4, gpus(8))], first)
    sim.step()
    sim.submit(replace(job("b0", "b", gpus(8)), name="small", namespace="ml"))
    result = sim.step()
    assert "reclaiming 1 job on c (default/train-3)" in reason(result, "b0")
    (taken,) = result.reclaims
    assert taken.victim_uid == "a3" and "reclaimed for job ml/small of queue b" in taken.reason
