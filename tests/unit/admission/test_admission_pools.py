"""Clusters that grow: admission counts the empty nodes a reported node pool can still add, after
the cluster's real nodes, so a gang bigger than today's nodes is admitted where a pool can grow."""

from __future__ import annotations

import pytest

from tests.unit.admission.builders import admitted, gpus, job, reason
from vglobal.admission import AdmissionPolicy, Admit, ClusterSnap, NodeSnap, QueueSnap, Snapshot, admit
from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.fit.placement import Clusters
from vglobal.admission.inputs import cluster_snap
from vglobal.admission.snapshot import PROVISIONABLE

Q = (QueueSnap("q"),)
GPU_UNITS = {"nvidia.com/gpu": 8000}


def cloud(*, current: int, max_: int, free_gpus: int = 8) -> object:
    nodes = [NodeSnap(f"gpu-{i}", gpus(free_gpus), gpus(8), {"pool": "gpu"}) for i in range(current)]
    pool = {"name": "gpu", "allocatable": GPU_UNITS, "labels": {"pool": "gpu"}, "current": current, "max": max_}
    return cluster_snap(
        name="cloud", labels={}, nodes=nodes, schedulable=True, hypernodes=(), devices={}, unplaced=(), pools=[pool]
    )


def test_each_node_a_pool_can_add_is_an_empty_node_after_the_real_ones() -> None:
    snap = cloud(current=2, max_=5)
    assert [n.name for n in snap.nodes] == [
        "gpu-0", "gpu-1", "gpu-provisionable-0", "gpu-provisionable-1", "gpu-provisionable-2"
    ]  # fmt: skip
    virtual = snap.nodes[2]
    assert (virtual.free, virtual.allocatable) == (gpus(8), gpus(8))
    assert virtual.labels == {"pool": "gpu", PROVISIONABLE: "gpu"}
    # placement fills real nodes first, whatever the names: a pool named "a" still comes last
    early = cluster_snap(
        name="c", labels={}, nodes=[NodeSnap("z", gpus(8), gpus(8))], schedulable=True, hypernodes=(),
        devices={}, unplaced=(), pools=[{"name": "a", "allocatable": GPU_UNITS, "current": 0, "max": 1}],
    )  # fmt: skip
    clusters = Clusters([early], ResourceIndex({"nvidia.com/gpu"}), "binpack")
    assert clusters.node_col[0] == {"z": 0, "a-provisionable-0": 1}
    assert clusters.node_names(0, [1, 0]) == ("z", "a-provisionable-0")  # what nominations and claims name


def test_a_gang_bigger_than_todays_nodes_is_admitted_where_the_pool_can_grow() -> None:
    big = job("big", "q", gpus(8), pods=4)
    (decision,) = admit(Snapshot(0, Q, (cloud(current=2, max_=4),), (big,))).decisions.values()
    assert decision == Admit("cloud", grows=(("gpu", 2),))
    assert decision.grows_text == "its gang needs 2 nodes of node pool gpu that cluster cloud can add"


def test_a_gang_that_fits_todays_nodes_leaves_the_pools_room_to_the_next() -> None:
    # "small" takes the two real nodes (not the pool's), so "big" still finds the pool's two nodes
    small = job("small", "q", gpus(8), pods=2)
    big = job("big", "q", gpus(8), pods=2, created=1)
    result = admit(Snapshot(0, Q, (cloud(current=2, max_=4),), (small, big)))
    assert result.decisions == {"small": Admit("cloud"), "big": Admit("cloud", grows=(("gpu", 2),))}


def test_a_pool_at_its_maximum_admits_nothing_more() -> None:
    big = job("big", "q", gpus(8), pods=3)
    result = admit(Snapshot(0, Q, (cloud(current=2, max_=2),), (big,)))
    assert admitted(result) == {}
    assert reason(result, "big") == "job needs nvidia.com/gpu 24 but all schedulable clusters together have 16"


@pytest.mark.parametrize(("policy", "cloud_nodes"), [("binpack", 6), ("spread", 2)])
def test_a_gang_that_fits_another_clusters_real_nodes_grows_no_pool(policy: str, cloud_nodes: int) -> None:
    # cloud's real nodes are full; onprem has one free node. Ranked by fullness alone, cloud (with
    # the pool's empty nodes) comes first under both policies: binpack as the fuller, spread as
    # the emptier. Real room anywhere goes before growing a pool.
    cloud_ = cluster_snap(
        name="cloud", labels={}, nodes=[NodeSnap(f"gpu-{i}", gpus(0), gpus(8)) for i in range(cloud_nodes)],
        schedulable=True, hypernodes=(), devices={}, unplaced=(),
        pools=[{"name": "gpu", "allocatable": GPU_UNITS, "current": cloud_nodes, "max": cloud_nodes + 2}],
    )  # fmt: skip
    onprem = ClusterSnap(
        "onprem", {}, (NodeSnap("n0", gpus(0), gpus(8)), NodeSnap("n1", gpus(0), gpus(8)),
                       NodeSnap("n2", gpus(0), gpus(8)), NodeSnap("n3", gpus(8), gpus(8)))
    )  # fmt: skip
    small = job("small", "q", gpus(8))
    result = admit(Snapshot(0, Q, (cloud_, onprem), (small,), policy=AdmissionPolicy(placement=policy)))
    assert admitted(result) == {"small": "onprem"}
    # a gang no real nodes hold still goes where the pool can grow
    big = job("big", "q", gpus(8), pods=2)
    result = admit(Snapshot(0, Q, (cloud_, onprem), (big,), policy=AdmissionPolicy(placement=policy)))
    assert admitted(result) == {"big": "cloud"}
