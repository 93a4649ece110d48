"""`print_hypernode_tree` renders the reported tree: roots, children, and the nodes under each."""

from __future__ import annotations

import io

from rich.console import Console

from vglobal.api.v1 import clusters_pb2, common_pb2
from vglobal.cli.hypernodes import print_hypernode_tree


def render(cluster: clusters_pb2.Cluster) -> str:
    buf = io.StringIO()
    print_hypernode_tree(cluster, Console(file=buf, width=100, color_system=None))
    return buf.getvalue()


def test_tree_lists_children_then_direct_nodes() -> None:
    c = clusters_pb2.Cluster(name="east")
    c.hypernodes.extend(
        [
            common_pb2.HyperNode(name="s0", tier=1, tier_name="tor", parent="spine", nodes=["n0", "n1"]),
            common_pb2.HyperNode(name="s1", tier=1, parent="spine", nodes=["n2"]),
            common_pb2.HyperNode(name="spine", tier=2, nodes=["n0", "n1", "n2"], children=["s0", "s1"]),
        ]
    )
    lines = [line.rstrip() for line in render(c).splitlines()]
    assert lines[0] == "east (3 HyperNodes)"
    assert "spine (tier 2) 3 nodes" in lines[1]
    assert "s0 (tier 1, tor) 2 nodes" in lines[2] and "n0" in lines[3] and "n1" in lines[4]
    assert "s1 (tier 1) 1 node" in lines[5] and "n2" in lines[6]
    assert len(lines) == 7  # n0..n2 are not repeated under the spine


def test_no_hypernodes_says_so() -> None:
    assert render(clusters_pb2.Cluster(name="plain")).strip() == "cluster plain reports no HyperNodes"
