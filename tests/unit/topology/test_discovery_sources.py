"""HyperNode discovery sources as Volcano's controller configures them: which run (``enabled``),
how often (``interval``), UFM's leaf groups and spine (cases of Volcano's ufm_test.go), RoCE from
LLDP labels, and unknown sources refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.model.cluster_topology import cluster_hyper_nodes
from vglobal.model.errors import ManifestError
from vglobal.model.fabric_topology import roce_hyper_nodes, ufm_hyper_nodes
from vglobal.model.hypernode import Member
from vglobal.model.topology_sources import DEFAULT_INTERVAL, discovery_plan

HOST = "kubernetes.io/hostname"


def _computer(node: str, leaf: str) -> dict[str, Any]:
    return {"system_name": node, "peer_node_name": leaf, "node_description": f"{node}-x", "description": "Computer IB Port"}


# Volcano's mockUfmData: group 0 = nodes 0-3 on leaves 0-3, group 1 = nodes 4-7 on leaves 4-7
# (node7 misses leaf7: still one group, joined through the other nodes).
UFM_PORTS = [_computer(f"node{n}", f"leaf{leaf}") for n in range(4) for leaf in range(4)] + [
    _computer(f"node{n}", f"leaf{leaf}")
    for n in range(4, 8)
    for leaf in range(4, 8)
    if (n, leaf) != (4, 7) and (n, leaf) != (7, 7)
]

# The seed's controller config (ufm on, roce off, label on with the NPU topologies).
SEED = {
    "networkTopologyDiscovery": [
        {
            "source": "ufm",
            "enabled": True,
            "interval": "10m",
            "credentials": {"secretRef": {"name": "ufm-credentials", "namespace": "volcano-system"}},
            "config": {"endpoint": "https://ufm-server:8080", "insecureSkipVerify": True},
        },
        {"source": "roce", "enabled": False, "interval": "15m", "config": {"endpoint": "https://roce-server:9090"}},
        {
            "source": "label",
            "enabled": True,
            "config": {
                "networkTopologyTypes": {
                    "topologyA2": [{"nodeLabel": "volcano.sh/tor"}, {"nodeLabel": HOST}],
                    "topologyA3": [
                        {"nodeLabel": "volcano.sh/hypercluster"},
                        {"nodeLabel": "volcano.sh/hypernode"},
                        {"nodeLabel": HOST},
                    ],
                }
            },
        },
    ]
}


def test_ufm_leaf_groups_and_spine_as_volcano_builds_them() -> None:
    out = {h.name: h for h in ufm_hyper_nodes(UFM_PORTS)}
    assert sorted(out) == ["leaf-hn-0", "leaf-hn-1", "spine-hn"]
    assert out["leaf-hn-0"].tier == 1 and out["leaf-hn-0"].members == tuple(
        Member("Node", exact=f"node{i}") for i in range(4)
    )
    assert out["leaf-hn-1"].members == tuple(Member("Node", exact=f"node{i}") for i in range(4, 8))
    assert out["spine-hn"].tier == 2 and out["spine-hn"].members == (
        Member("HyperNode", exact="leaf-hn-0"),
        Member("HyperNode", exact="leaf-hn-1"),
    )


def test_ufm_reads_only_host_ports_and_refuses_what_is_not_a_port_list() -> None:
    switch_port = {"system_name": "leaf0", "peer_node_name": "spine", "description": "Switch IB Port"}
    assert [h.name for h in ufm_hyper_nodes([switch_port])] == []
    assert [h.name for h in ufm_hyper_nodes([switch_port, _computer("a", "l")])] == ["leaf-hn-0", "spine-hn"]
    with pytest.raises(ValueError, match="expected a JSON list"):
        ufm_hyper_nodes({"ports": []})


def test_the_seed_config_runs_ufm_and_label_and_leaves_roce_off() -> None:
    plan = discovery_plan(SEED)
    assert [(s.source, s.interval) for s in plan.sources] == [("ufm", 600.0), ("label", DEFAULT_INTERVAL)]
    assert plan.disabled == ("roce",)
    assert plan.get("ufm") is not None and plan.get("ufm").secret_ref == ("volcano-system", "ufm-credentials")  # type: ignore[union-attr]
    npu = {f"npu{i}": {HOST: f"npu{i}", "volcano.sh/hypercluster": "hc0", "volcano.sh/hypernode": f"sn{i // 2}"} for i in range(4)}
    ib = {f"node{i}": {HOST: f"node{i}"} for i in range(8)}
    tree = {h.name: h for h in cluster_hyper_nodes([], SEED, {**npu, **ib}, {"ufm": ufm_hyper_nodes(UFM_PORTS)})}
    assert tree["leaf-hn-0"].nodes == {f"node{i}" for i in range(4)}
    assert tree["spine-hn"].children == ("leaf-hn-0", "leaf-hn-1")
    labelled = {n: h.nodes for n, h in tree.items() if n.startswith("hypernode-topologya3")}
    assert sorted(map(sorted, labelled.values())) == [["npu0", "npu1"], ["npu0", "npu1", "npu2", "npu3"], ["npu2", "npu3"]]
    # before UFM answered, the label HyperNodes alone
    assert all(not n.endswith("-hn") and "leaf-hn" not in n for n in (h.name for h in cluster_hyper_nodes([], SEED, {**npu, **ib})))


def test_enabled_false_or_omitted_removes_a_source() -> None:
    nodes = {"n0": {HOST: "n0", "volcano.sh/tor": "t0"}}
    label = {"networkTopologyTypes": {"rack": [{"nodeLabel": "volcano.sh/tor"}, {"nodeLabel": HOST}]}}
    on = {"networkTopologyDiscovery": [{"source": "label", "enabled": True, "config": label}]}
    off = {"networkTopologyDiscovery": [{"source": "label", "enabled": False, "config": label}]}
    omitted = {"networkTopologyDiscovery": [{"source": "label", "config": label}]}
    assert len(cluster_hyper_nodes([], on, nodes)) == 1
    assert cluster_hyper_nodes([], off, nodes) == ()
    assert cluster_hyper_nodes([], omitted, nodes) == ()  # Go's zero value: off, as in Volcano
    assert len(cluster_hyper_nodes([], label, nodes)) == 1  # the short form is the label source, on
    ufm_off = {"networkTopologyDiscovery": [{**SEED["networkTopologyDiscovery"][0], "enabled": False}]}
    assert cluster_hyper_nodes([], ufm_off, {"node0": {HOST: "node0"}}, {"ufm": ufm_hyper_nodes(UFM_PORTS)}) == ()


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        ({"source": "lldp", "enabled": True}, "networkTopologyDiscovery[0].source", "unknown discovery source 'lldp'"),
        ({"source": "ufm", "enabled": True, "credentials": {"secretRef": {"name": "c"}}}, "config.endpoint", "required"),
        ({"source": "ufm", "enabled": True, "config": {"endpoint": "https://u"}}, "credentials.secretRef", "required"),
        ({"source": "label", "enabled": "yes"}, "networkTopologyDiscovery[0].enabled", "true or false"),
        ({"source": "label", "enabled": True, "interval": "ten minutes"}, "networkTopologyDiscovery[0].interval", "invalid duration"),
        ({"source": "roce", "enabled": True, "config": {"endpoint": "https://r"}}, "config.endpoint", "LLDP"),
    ],
)
def test_bad_sources_are_refused_naming_the_field(entry: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ManifestError) as err:
        discovery_plan({"networkTopologyDiscovery": [entry]})
    assert err.value.field.endswith(field) and words in err.value.message


def test_a_source_listed_twice_is_refused() -> None:
    twice = {"networkTopologyDiscovery": [{"source": "label"}, {"source": "label"}]}
    with pytest.raises(ManifestError, match="listed twice"):
        discovery_plan(twice)


def test_roce_groups_nodes_by_the_switches_their_lldp_labels_name() -> None:
    nodes = {
        "a": {"lldp.vglobal.io/eth0": "sw1", "lldp.vglobal.io/eth1": "sw2"},
        "b": {"lldp.vglobal.io/eth0": "sw2"},
        "c": {"lldp.vglobal.io/eth0": "sw3"},
        "d": {"other": "sw3"},
    }
    out = {h.name: h for h in roce_hyper_nodes(nodes, "lldp.vglobal.io/")}
    assert out["roce-leaf-hn-0"].members == (Member("Node", exact="a"), Member("Node", exact="b"))
    assert out["roce-leaf-hn-1"].members == (Member("Node", exact="c"),)
    config = {"networkTopologyDiscovery": [{"source": "roce", "enabled": True}]}
    tree = {h.name: h.nodes for h in cluster_hyper_nodes([], config, nodes)}
    assert tree == {"roce-leaf-hn-0": {"a", "b"}, "roce-leaf-hn-1": {"c"}, "roce-spine-hn": {"a", "b", "c"}}


def test_a_simulated_cluster_refuses_unknown_sources_and_ufm() -> None:
    def doc(discovery: dict[str, Any]) -> dict[str, Any]:
        group = {"name": "g", "count": 1, "allocatable": {"cpu": "1", "memory": "1Gi"}}
        return {
            "apiVersion": "vglobal.io/v1alpha1",
            "kind": "SimCluster",
            "metadata": {"name": "c"},
            "spec": {"nodeGroups": [group], "hyperNodeDiscovery": discovery},
        }

    with pytest.raises(ManifestError) as err:
        parse_sim_cluster(doc({"networkTopologyDiscovery": [{"source": "infiniband", "enabled": True}]}))
    assert err.value.field == "spec.hyperNodeDiscovery.networkTopologyDiscovery[0].source"
    with pytest.raises(ManifestError, match="a simulated cluster takes label and roce"):
        parse_sim_cluster(doc({"networkTopologyDiscovery": [SEED["networkTopologyDiscovery"][0]]}))
