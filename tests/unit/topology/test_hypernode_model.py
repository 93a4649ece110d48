"""HyperNode manifests, label discovery and tree resolution: tables of inputs and exact outcomes."""

from __future__ import annotations

from typing import Any

import pytest

from vglobal.model.cluster_topology import cluster_hyper_nodes
from vglobal.model.errors import ManifestError
from vglobal.model.hypernode import (
    discover_hyper_nodes,
    parse_hyper_nodes,
    resolve_hyper_nodes,
    tier_of_name,
)

NODES = {f"node-{i}": {"kubernetes.io/hostname": f"node-{i}", "rack": f"r{i // 2}"} for i in range(6)}


def hn(name: str, tier: int, *members: dict[str, Any], tier_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"tier": tier, "members": list(members)}
    if tier_name:
        spec["tierName"] = tier_name
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


def node_exact(name: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"exactMatch": {"name": name}}}


def child(name: str) -> dict[str, Any]:
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def test_three_selector_kinds_resolve_into_node_sets() -> None:
    docs = [
        hn("s0", 1, node_exact("node-0"), node_exact("node-1"), tier_name="tor"),
        hn("s1", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "node-[23]"}}}),
        hn("s2", 1, {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r2"}}}}),
        hn("s3", 2, child("s0"), child("s1"), tier_name="spine"),
    ]
    tree = {h.name: h for h in resolve_hyper_nodes(parse_hyper_nodes(docs), NODES)}
    assert tree["s0"].nodes == {"node-0", "node-1"}
    assert tree["s1"].nodes == {"node-2", "node-3"}
    assert tree["s2"].nodes == {"node-4", "node-5"}
    assert tree["s3"].nodes == {"node-0", "node-1", "node-2", "node-3"}
    assert tree["s3"].children == ("s0", "s1") and tree["s0"].parent == "s3" and tree["s2"].parent is None
    assert tier_of_name(list(tree.values()), "spine") == 2
    assert tier_of_name(list(tree.values()), "nope") is None


@pytest.mark.parametrize(
    ("docs", "field", "message"),
    [
        (
            [hn("s0", 1, {"type": "Pod", "selector": {}})],
            "spec.hyperNodes[0].spec.members[0].type",
            "Node or HyperNode",
        ),
        (
            [
                hn(
                    "s0",
                    1,
                    {
                        "type": "Node",
                        "selector": {"exactMatch": {"name": "a"}, "regexMatch": {"pattern": "b"}},
                    },
                )
            ],
            "spec.hyperNodes[0].spec.members[0].selector",
            "exactly one",
        ),
        (
            [hn("s0", 2, {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "s.*"}}})],
            "spec.hyperNodes[0].spec.members[0].selector.regexMatch",
            "only use exactMatch",
        ),
        (
            [hn("s0", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "node-[("}}})],
            "spec.hyperNodes[0].spec.members[0].selector.regexMatch.pattern",
            "invalid regular expression",
        ),
        ([hn("s0", -1, node_exact("node-0"))], "spec.hyperNodes[0].spec.tier", ">= 0"),
        ([hn("s0", 1)], "spec.hyperNodes[0].spec.members", "at least one"),
        (
            [hn("s0", 1, node_exact("node-0")), hn("s0", 1, node_exact("node-1"))],
            "spec.hyperNodes[1]",
            "duplicate",
        ),
    ],
)
def test_manifest_errors_name_the_member(docs: list[dict[str, Any]], field: str, message: str) -> None:
    with pytest.raises(ManifestError) as err:
        parse_hyper_nodes(docs)
    assert err.value.field == field
    assert message in err.value.message


@pytest.mark.parametrize(
    ("docs", "where", "message"),
    [
        (
            [hn("s0", 1, node_exact("node-0")), hn("a", 2, child("s0")), hn("b", 2, child("s0"))],
            "HyperNode b: members[0]",
            'already has parent "a"',
        ),
        ([hn("a", 2, child("b")), hn("b", 2, child("a"))], "HyperNode a: members[0]", "must be below tier 2"),
        ([hn("a", 2, child("ghost"))], "HyperNode a: members[0]", 'unknown HyperNode "ghost"'),
        (
            [
                hn("s0", 1, node_exact("node-0")),
                hn("s1", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "node-0"}}}),
            ],
            "HyperNode s1: members[0]",
            'node "node-0" already belongs to HyperNode "s0"',
        ),
    ],
)
def test_tree_errors_one_parent_no_cycles(docs: list[dict[str, Any]], where: str, message: str) -> None:
    with pytest.raises(ManifestError) as err:
        resolve_hyper_nodes(parse_hyper_nodes(docs), NODES)
    assert err.value.field == where
    assert message in err.value.message


def _labels(host: str, **extra: str) -> dict[str, str]:
    return {"kubernetes.io/hostname": host, **extra}


DISCOVERY = {
    "networkTopologyTypes": {
        "topology-a": [
            {"nodeLabel": "volcano.sh/hypercluster"},
            {"nodeLabel": "volcano.sh/hypernode"},
            {"nodeLabel": "kubernetes.io/hostname"},
        ]
    }
}


def test_label_discovery_builds_tiers_bottom_up_and_drops_hostname() -> None:
    nodes = {
        "n0": _labels("n0", **{"volcano.sh/hypernode": "g0", "volcano.sh/hypercluster": "c4"}),
        "n1": _labels("n1", **{"volcano.sh/hypernode": "g0", "volcano.sh/hypercluster": "c4"}),
        "n2": _labels("n2", **{"volcano.sh/hypernode": "g1", "volcano.sh/hypercluster": "c4"}),
        "n3": _labels("n3", **{"volcano.sh/hypernode": "g2"}),  # no upper label: stops at tier 1
        "n4": _labels("n4", **{"volcano.sh/hypercluster": "c4"}),  # no tier-1 label: in no HyperNode
    }
    tree = {h.name: h for h in resolve_hyper_nodes(discover_hyper_nodes(DISCOVERY, nodes), nodes)}
    assert sorted(tree) == [
        "hypernode-topology-a-tier1-g0",
        "hypernode-topology-a-tier1-g1",
        "hypernode-topology-a-tier1-g2",
        "hypernode-topology-a-tier2-c4",
    ]
    top = tree["hypernode-topology-a-tier2-c4"]
    assert top.tier == 2 and top.tier_name == "volcano.sh/hypercluster"
    assert top.nodes == {"n0", "n1", "n2"}
    assert top.children == ("hypernode-topology-a-tier1-g0", "hypernode-topology-a-tier1-g1")
    assert tree["hypernode-topology-a-tier1-g2"].parent is None
    assert tree["hypernode-topology-a-tier1-g0"].nodes == {"n0", "n1"}


def test_discovery_rejects_a_switch_under_two_parents() -> None:
    nodes = {
        "n0": _labels("n0", **{"volcano.sh/hypernode": "g0", "volcano.sh/hypercluster": "c1"}),
        "n1": _labels("n1", **{"volcano.sh/hypernode": "g0", "volcano.sh/hypercluster": "c2"}),
    }
    with pytest.raises(ManifestError) as err:
        discover_hyper_nodes(DISCOVERY, nodes)
    assert err.value.field == "nodes[n1].labels[volcano.sh/hypercluster]"
    assert "two parents" in err.value.message


def test_volcano_configmap_form_and_manifests_together() -> None:
    config = {"networkTopologyDiscovery": [{"source": "label", "enabled": True, "config": DISCOVERY}]}
    nodes = {"n0": _labels("n0", **{"volcano.sh/hypernode": "g0"}), "m0": _labels("m0")}
    out = cluster_hyper_nodes([hn("manual", 1, node_exact("m0"))], config, nodes)
    assert [(h.name, sorted(h.nodes)) for h in out] == [
        ("hypernode-topology-a-tier1-g0", ["n0"]),
        ("manual", ["m0"]),
    ]
