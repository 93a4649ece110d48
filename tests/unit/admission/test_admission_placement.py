"""Placement: the gang fits ONE cluster's nodes; annotations; binpack/spread; same-cycle reservation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.unit.admission.builders import GPU, admitted, cluster, gpus, job, reason
from vglobal.admission import AdmissionPolicy, ClusterSnap, NodeSnap, QueueSnap, Snapshot, admit
from vglobal.admission.fit.gang import prepare_gang
from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.fit.placement import Clusters
from vglobal.model.resources import ResourceVector
from vglobal.sim.rounds import AdmissionRounds

Q = (QueueSnap("q"),)


def half_full(name: str, nodes: int, free_gpus: int) -> ClusterSnap:
    return ClusterSnap(
        name, {}, tuple(NodeSnap(f"{name}-n{i}", gpus(free_gpus), gpus(8)) for i in range(nodes))
    )


def test_sum_of_clusters_is_not_enough_the_gang_needs_one_cluster() -> None:
    # 2 x 4 free GPUs per node in two clusters: 16 free in total, but no node holds an 8-GPU pod.
    clusters = (half_full("east", 2, 4), half_full("west", 2, 4))
    result = admit(Snapshot(0, Q, clusters, (job("j", "q", gpus(8)),)))
    assert reason(result, "j") == (
        "no cluster fits gang: 1 pod x {nvidia.com/gpu: 8}; best: east can hold 0 of the 1 pods "
        "(0 nodes have {nvidia.com/gpu: 8} free)"
    )


def test_a_bigger_gang_that_fails_like_a_smaller_one_says_so_not_the_smaller_ones_figures() -> None:
    # The 1-pod gang is tried first (older) and fits nowhere; the 2-pod gang of the same pods is
    # known not to fit without packing, and its reason must not claim the smaller gang's figures.
    clusters = (half_full("east", 2, 4),)
    result = admit(
        Snapshot(0, Q, clusters, (job("one", "q", gpus(8)), job("two", "q", gpus(8), pods=2, created=1)))
    )
    assert reason(result, "two") == (
        "no cluster fits gang: 2 pods x {nvidia.com/gpu: 8}; not even the smaller gang 1 pod x "
        "{nvidia.com/gpu: 8} fits a candidate cluster (best: east can hold 0 of the 1 pods "
        "(0 nodes have {nvidia.com/gpu: 8} free))"
    )


def test_gang_is_all_or_nothing_on_one_cluster_and_reports_the_closest() -> None:
    clusters = (half_full("east", 5, 8), half_full("west", 3, 8))
    result = admit(
        Snapshot(0, Q, clusters, (job("big", "q", gpus(8), pods=8), job("small", "q", gpus(8), pods=5)))
    )
    assert reason(result, "big") == (
        "no cluster fits gang: 8 pods x {nvidia.com/gpu: 8}; best: east can hold 5 of the 8 pods "
        "(5 nodes have {nvidia.com/gpu: 8} free), lacks {nvidia.com/gpu: 24} in total"
    )
    assert admitted(result) == {"small": "east"}


def test_pods_of_a_gang_spread_over_nodes_and_several_shapes_pack_together() -> None:
    node = gpus(8) + {"cpu": 16_000}
    clusters = (cluster("c", 2, node),)
    gang = ((gpus(4) + {"cpu": 2_000}, 3), (ResourceVector({"cpu": 4_000}), 2))
    j = job("j", "q", gpus(0))
    j = replace(j, gang=gang, request=gpus(12) + {"cpu": 14_000})
    other = replace(j, uid="k", queue="r", gang=((gpus(4), 3),), request=gpus(12))
    result = admit(Snapshot(0, (QueueSnap("q"), QueueSnap("r")), clusters, (j, other)))
    assert admitted(result) == {"j": "c"}
    # j's three 4-GPU pods took node 0 and half of node 1: one more 4-GPU pod fits, not three
    assert reason(result, "k") == (
        "no cluster fits gang: 3 pods x {nvidia.com/gpu: 4}; best: c can hold 1 of the 3 pods "
        "(1 nodes have {nvidia.com/gpu: 4} free), lacks {nvidia.com/gpu: 8} in total"
    )


@pytest.mark.parametrize(
    ("case", "placement", "expected"),
    [
        ("allowed clusters", {"allowed_clusters": frozenset({"b"})}, "b"),
        ("cluster selector", {"cluster_selector": {"region": "eu"}}, "c"),
        ("excluded after a rejection", {"excluded_clusters": frozenset({"a"})}, "b"),
    ],
)
def test_placement_annotations(case: str, placement: dict[str, Any], expected: str) -> None:
    clusters = (
        cluster("a", 1, gpus(8), {"region": "us"}),
        cluster("b", 1, gpus(8), {"region": "us"}),
        cluster("c", 1, gpus(8), {"region": "eu"}),
    )
    result = admit(Snapshot(0, Q, clusters, (replace(job("j", "q", gpus(8)), **placement),)))
    assert admitted(result) == {"j": expected}, case


def test_no_candidate_cluster_is_explained() -> None:
    result = admit(
        Snapshot(0, Q, (cluster("a", 1, gpus(8)),), (job("j", "q", gpus(1), allowed_clusters=frozenset()),))
    )
    assert reason(result, "j") == "no cluster fits gang: 1 pod x {nvidia.com/gpu: 1}; no candidate cluster"


def test_unschedulable_cluster_gets_nothing() -> None:
    clusters = (cluster("down", 4, gpus(8), schedulable=False), cluster("up", 1, gpus(8)))
    result = admit(Snapshot(0, Q, clusters, (job("j1", "q", gpus(8)), job("j2", "q", gpus(8), created=1))))
    assert admitted(result) == {"j1": "up"}


@pytest.mark.parametrize(("policy", "expected"), [("binpack", "full"), ("spread", "empty")])
def test_binpack_prefers_the_fullest_cluster_spread_the_emptiest(policy: str, expected: str) -> None:
    clusters = (
        half_full("empty", 4, 8),
        ClusterSnap("full", {}, half_full("f", 4, 2).nodes[:3] + (NodeSnap("f-n9", gpus(8), gpus(8)),)),
    )
    result = admit(Snapshot(0, Q, clusters, (job("j", "q", gpus(8)),), policy=AdmissionPolicy(placement=policy)))
    assert admitted(result) == {"j": expected}


def test_ties_go_to_the_cluster_name() -> None:
    clusters = (cluster("zeta", 1, gpus(8)), cluster("alpha", 1, gpus(8)))
    assert admitted(admit(Snapshot(0, Q, clusters, (job("j", "q", gpus(8)),)))) == {"j": "alpha"}


def test_capacity_placed_earlier_in_the_cycle_is_reserved() -> None:
    # Two clusters of one 8-GPU node, three 5-GPU jobs of three queues: each placement is seen by
    # the next decision, so j1 goes to b and j2 waits instead of being sent to a full cluster.
    queues = [QueueSnap("q0"), QueueSnap("q1"), QueueSnap("q2")]
    sim = AdmissionRounds.of(
        queues,
        [cluster("a", 1, gpus(8)), cluster("b", 1, gpus(8))],
        [job(f"j{i}", f"q{i}", gpus(5), created=i) for i in range(3)],
    )
    result = sim.step()
    assert admitted(result) == {"j0": "a", "j1": "b"}
    assert reason(result, "j2").startswith(
        "no cluster fits gang: 1 pod x {nvidia.com/gpu: 5}; best: a can hold 0"
    )
    assert admitted(sim.step()) == {}  # the next cycle sees the same
    sim.finish("j0")
    assert admitted(sim.step()) == {"j2": "a"}
    assert sim.dispatcher.running["j2"].placements == {"a-n00": gpus(5)}


def test_a_trial_taken_back_leaves_the_cluster_as_it_was() -> None:
    # A HyperJob's trial (a checkpoint of the cycle's ledger, rolled back): what it took is free
    # again, and what the cycle learnt of the cluster while it was full (a gang that did not fit) is
    # not kept.
    index = ResourceIndex([GPU])
    clusters = Clusters([cluster("a", 4, gpus(8))], index, "binpack")
    scale = np.array([8000])
    three, two = (prepare_gang(((gpus(8), n),), index, scale) for n in (3, 2))
    before = (clusters.free(0).copy(), list(clusters.tot[0]), list(clusters.free_sum))
    mark = clusters.ledger.checkpoint()
    placement = clusters.fit(0, three)
    assert placement is not None
    clusters.commit(0, placement, three)
    assert clusters.fit(0, two) is None  # one node left: the 2-pod gang does not fit now
    clusters.ledger.rollback(mark)
    assert (clusters.free(0).tolist(), clusters.tot[0], clusters.free_sum) == (
        before[0].tolist(),
        before[1],
        before[2],
    )
    assert clusters.fit(0, two) is not None and clusters.fit(0, three) is not None
    # Kept instead: the room stays taken.
    mark = clusters.ledger.checkpoint()
    placement = clusters.fit(0, three)
    assert placement is not None
    clusters.commit(0, placement, three)
    clusters.ledger.keep(mark)
    assert clusters.tot[0] == [8000] and clusters.fit(0, two) is None
