"""network-topology-aware scenarios: hard keeps a gang in one HyperNode of allowed tier, soft degrades."""

from __future__ import annotations

import pytest

from tests.unit.topology.topo_cases import gang, nodes, run, switch_of, switches

HN = switches(per_switch=2, count=4, spines=2)  # s0..s3 of 2 nodes, spine0 = s0+s1, spine1 = s2+s3
NODES = nodes(8)  # 2 cpu each: one 2-cpu task per node


def test_hard_tier1_gang_lands_in_one_switch_and_prefers_the_one_already_used() -> None:
    busy = gang("busy", 1, cpu="1", placed={0: "n2"})  # s1 is partly used: binpack over HyperNodes picks it
    out = run(NODES, [busy, gang("g", 1, cpu="1", topology=("hard", 1), creation=1)], HN)
    assert out.binds == {"g-0": "n2"}


@pytest.mark.parametrize(
    ("size", "tier", "placed"), [(2, 1, True), (3, 1, False), (3, 2, True), (4, 2, True), (5, 2, False)]
)
def test_hard_never_crosses_the_allowed_tier(size: int, tier: int, placed: bool) -> None:
    out = run(NODES, [gang("g", size, topology=("hard", tier))], HN)
    if not placed:
        assert out.binds == {}
        assert f"no HyperNode of tier <= {tier} can hold the gang" in out.reasons["g"]
        return
    assert len(out.binds) == size
    assert len({switch_of(HN, n, tier) for n in out.binds.values()}) == 1


def test_soft_prefers_one_switch_then_degrades_to_the_cluster() -> None:
    out = run(NODES, [gang("g", 2, topology=("soft", 1))], HN)
    assert len({switch_of(HN, n) for n in out.binds.values()}) == 1
    wide = run(NODES, [gang("g", 5, topology=("soft", 1))], HN)
    assert len(wide.binds) == 5  # no HyperNode holds 5, the synthetic top does


def test_hard_gang_uses_the_free_switch_when_others_are_fragmented() -> None:
    # one task on each of n0, n2, n4: only s3 (n6, n7) still has two free nodes
    busy = [gang(f"b{i}", 1, placed={0: f"n{2 * i}"}, creation=i) for i in range(3)]
    out = run(NODES, [*busy, gang("g", 2, topology=("hard", 1), creation=9)], HN)
    assert sorted(out.binds.values()) == ["n6", "n7"]
    plain = run(NODES, [*busy, gang("g", 2, creation=9)], HN)
    assert (
        len({switch_of(HN, n) for n in plain.binds.values()}) == 2
    )  # without topology it spreads over switches


def test_rest_of_a_running_gang_stays_under_its_switch() -> None:
    job = gang("g", 2, topology=("hard", 1), placed={0: "n4"})
    out = run(NODES, [job], HN)
    assert out.binds == {"g-1": "n5"}


def test_without_hypernodes_only_the_top_exists() -> None:
    assert len(run(NODES, [gang("g", 3, topology=("soft", 1))], ()).binds) == 3
    # the synthetic top sits one tier above the highest real tier: tier 1 when there is none
    assert len(run(NODES, [gang("g", 3, topology=("hard", 1))], ()).binds) == 3
    out = run(NODES, [gang("g", 3, topology=("hard", 0))], ())
    assert out.binds == {} and "no HyperNode of tier <= 0" in out.reasons["g"]


def test_normal_pods_pack_into_the_busier_switch() -> None:
    from vglobal.model.hypernode import ResolvedHyperNode

    hns = (
        ResolvedHyperNode("a", 1, parent="top", nodes=frozenset({"n2", "n3"})),
        ResolvedHyperNode("b", 1, parent="top", nodes=frozenset({"n0", "n1"})),
        ResolvedHyperNode("top", 2, children=("a", "b"), nodes=frozenset({"n0", "n1", "n2", "n3"})),
    )
    text = """
actions: "allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: network-topology-aware}]
"""
    busy = gang("busy", 1, placed={0: "n3"})
    out = run(nodes(4), [busy, gang("p", 1, cpu="1", creation=1)], hns, conf=text)
    assert out.binds == {"p-0": "n2"}  # switch a is half used: binpack over HyperNodes picks it
    off = text.replace(
        "{name: network-topology-aware}",
        "{name: network-topology-aware, arguments: {normal-pod.enable: false}}",
    )
    assert run(nodes(4), [busy, gang("p", 1, cpu="1", creation=1)], hns, conf=off).binds == {"p-0": "n0"}
