"""The hub never dispatches a hard-topology gang to a cluster that cannot hold it in one HyperNode,
and prefers the cluster where the gang fits at the lowest tier."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import admitted, gpus, job, reason
from vglobal.admission import ClusterSnap, NodeSnap, QueueSnap, Snapshot, admit
from vglobal.admission.fit.topology import lowest_tier
from vglobal.admission.snapshot import HyperNodeSnap

Q = (QueueSnap("q"),)


def topo_cluster(name: str, per_switch: int, switches: int, free_gpus: int = 8) -> ClusterSnap:
    """``switches`` tier-1 HyperNodes of ``per_switch`` 8-GPU nodes under one tier-2 HyperNode."""
    nodes = tuple(
        NodeSnap(f"{name}-n{i:02d}", gpus(free_gpus), gpus(8)) for i in range(per_switch * switches)
    )
    hns = [
        HyperNodeSnap(
            f"{name}-s{s}",
            1,
            f"{name}-spine",
            tuple(n.name for n in nodes[s * per_switch : (s + 1) * per_switch]),
        )
        for s in range(switches)
    ]
    hns.append(HyperNodeSnap(f"{name}-spine", 2, None, tuple(n.name for n in nodes)))
    return ClusterSnap(name, {}, nodes, True, tuple(hns))


def test_lowest_tier_table() -> None:
    c = topo_cluster("a", per_switch=4, switches=2)
    assert lowest_tier(c, ((gpus(8), 4),), None) == 1
    assert lowest_tier(c, ((gpus(8), 5),), None) == 2
    assert lowest_tier(c, ((gpus(8), 5),), 1) is None
    assert lowest_tier(c, ((gpus(8), 9),), None) is None
    assert lowest_tier(c, ((gpus(4), 10),), 1) is None  # 4 nodes x 2 pods = 8 per switch
    assert lowest_tier(ClusterSnap("bare", {}, c.nodes), ((gpus(8), 1),), None) is None


def test_hard_gang_goes_only_where_one_switch_holds_it() -> None:
    wide = topo_cluster("big", per_switch=2, switches=8)  # 16 nodes, but only 2 per switch
    narrow = topo_cluster("small", per_switch=4, switches=1)  # 4 nodes behind one switch
    hard = job("j", "q", gpus(8), pods=4, network_topology=("hard", 1))
    assert admitted(admit(Snapshot(0, Q, (wide, narrow), (hard,)))) == {"j": "small"}
    plain = replace(hard, network_topology=None)
    assert admitted(admit(Snapshot(0, Q, (wide, narrow), (plain,)))) == {"j": "big"}  # both empty: name order


def test_hard_gang_waits_with_a_reason_when_no_hypernode_of_the_tier_holds_it() -> None:
    wide = topo_cluster("big", per_switch=2, switches=8)
    hard = job("j", "q", gpus(8), pods=4, network_topology=("hard", 1))
    result = admit(Snapshot(0, Q, (wide,), (hard,)))
    assert admitted(result) == {}
    assert "no HyperNode of tier <= 1 holds it in any candidate cluster" in reason(result, "j")
    # the failure is not cached for the same gang without topology: it is still admitted
    both = admit(Snapshot(0, Q, (wide,), (hard, replace(hard, uid="k", name="k", network_topology=None))))
    assert admitted(both) == {"k": "big"}


def test_clusters_are_preferred_by_the_lowest_tier_that_holds_the_gang() -> None:
    tier2_only = topo_cluster("aaa", per_switch=2, switches=4)
    tier1 = topo_cluster("zzz", per_switch=4, switches=2)
    hard = job("j", "q", gpus(8), pods=4, network_topology=("hard", 2))
    assert admitted(admit(Snapshot(0, Q, (tier2_only, tier1), (hard,)))) == {"j": "zzz"}
    soft = replace(hard, network_topology=("soft", 1))
    assert admitted(admit(Snapshot(0, Q, (tier2_only,), (soft,)))) == {"j": "aaa"}  # soft degrades


def test_same_cycle_reservation_counts_within_the_switch() -> None:
    c = topo_cluster("c", per_switch=4, switches=2)
    first = job("a", "q", gpus(8), pods=4, network_topology=("hard", 1), created=0)
    second = job("b", "q", gpus(8), pods=4, network_topology=("hard", 1), created=1)
    third = job("c", "q", gpus(8), pods=1, network_topology=("hard", 1), created=2)
    assert admitted(admit(Snapshot(0, Q, (c,), (first, second, third)))) == {"a": "c", "b": "c"}
