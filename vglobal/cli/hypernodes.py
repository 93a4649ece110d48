"""`vglobal get hypernodes --cluster NAME`: a cluster's HyperNode tree as its agent reported it."""

from __future__ import annotations

from rich.console import Console
from rich.tree import Tree

from vglobal.api.v1 import clusters_pb2, common_pb2


def _label(h: common_pb2.HyperNode) -> str:
    tier = f"tier {h.tier}" + (f", {h.tier_name}" if h.tier_name else "")
    count = len(h.nodes)
    return f"[bold]{h.name}[/bold] ({tier}) {count} node{'s' if count != 1 else ''}"


def build_tree(cluster: clusters_pb2.Cluster) -> Tree:
    """Roots by tier (highest first) then name; a HyperNode lists its child HyperNodes, and the
    nodes that sit directly in it (not under a child)."""
    by_name = {h.name: h for h in cluster.hypernodes}
    top = Tree(f"[bold]{cluster.name}[/bold] ({len(by_name)} HyperNodes)")

    def add(parent: Tree, h: common_pb2.HyperNode) -> None:
        branch = parent.add(_label(h))
        kids = sorted((by_name[c] for c in h.children if c in by_name), key=lambda k: (k.tier, k.name))
        below = {n for k in kids for n in k.nodes}
        for kid in kids:
            add(branch, kid)
        for node in sorted(set(h.nodes) - below):
            branch.add(node)

    roots = [h for h in cluster.hypernodes if not h.parent or h.parent not in by_name]
    for h in sorted(roots, key=lambda r: (-r.tier, r.name)):
        add(top, h)
    return top


def print_hypernode_tree(cluster_msg: clusters_pb2.Cluster, console: Console) -> None:
    if not cluster_msg.hypernodes:
        console.print(f"cluster {cluster_msg.name} reports no HyperNodes")
        return
    console.print(build_tree(cluster_msg))
