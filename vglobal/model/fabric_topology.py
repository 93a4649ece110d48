"""HyperNodes from a fabric's links (node -> leaf switch), as Volcano's UFM discoverer builds them.

Leaf switches that share a node (a node with several rails) are one group: each group is a tier-1
HyperNode ``leaf-hn-<i>`` of its nodes (groups numbered in the order of their first leaf's name)
and one tier-2 ``spine-hn`` holds every group. UFM gives the links through its ports API; RoCE
fabrics through LLDP neighbours published as node labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vglobal.model.hypernode import HyperNodeManifest, Member

_COMPUTER = "Computer"  # a port description of a host's HCA (its peer is the leaf switch)


def ufm_links(ports: Any) -> list[tuple[str, str]]:
    """(node, leaf) from UFM's ``/ufmRest/resources/ports`` answer; ValueError when it is not one."""
    if not isinstance(ports, list):
        raise ValueError("UFM ports: expected a JSON list")
    links = []
    for i, port in enumerate(ports):
        if not isinstance(port, Mapping):
            raise ValueError(f"UFM ports[{i}]: expected an object")
        if _COMPUTER not in str(port.get("description", "")):
            continue  # switch-to-switch ports: a host's port names both ends
        node, leaf = port.get("system_name"), port.get("peer_node_name")
        if isinstance(node, str) and node and isinstance(leaf, str) and leaf:
            links.append((node, leaf))
    return links


def roce_links(nodes: Mapping[str, Mapping[str, str]], prefix: str) -> list[tuple[str, str]]:
    """(node, switch) from LLDP neighbour labels ``<prefix><interface>: <switch>``."""
    return [
        (node, switch)
        for node in sorted(nodes)
        for key, switch in sorted(nodes[node].items())
        if key.startswith(prefix) and switch
    ]


def fabric_hyper_nodes(
    links: Iterable[tuple[str, str]], name_prefix: str = ""
) -> tuple[HyperNodeManifest, ...]:
    """Leaf groups (tier 1) and their spine (tier 2) from (node, leaf) links."""
    leaf_nodes: dict[str, set[str]] = {}
    node_leaves: dict[str, set[str]] = {}
    for node, leaf in links:
        leaf_nodes.setdefault(leaf, set()).add(node)
        node_leaves.setdefault(node, set()).add(leaf)
    groups: list[set[str]] = []
    done: set[str] = set()
    for first in sorted(leaf_nodes):
        if first in done:
            continue
        members: set[str] = set()
        todo = [first]
        while todo:
            leaf = todo.pop()
            if leaf in done:
                continue
            done.add(leaf)
            members |= leaf_nodes[leaf]
            todo.extend(other for n in leaf_nodes[leaf] for other in node_leaves[n] if other not in done)
        groups.append(members)
    leaves = [
        HyperNodeManifest(f"{name_prefix}leaf-hn-{i}", 1, "", _members("Node", nodes))
        for i, nodes in enumerate(groups)
    ]
    if not leaves:
        return ()
    kids = _members("HyperNode", [h.name for h in leaves])
    spine = HyperNodeManifest(f"{name_prefix}spine-hn", 2, "", kids)
    return (*leaves, spine)


def _members(kind: str, names: Iterable[str]) -> tuple[Member, ...]:
    return tuple(Member(kind, exact=n) for n in sorted(names))


def roce_hyper_nodes(nodes: Mapping[str, Mapping[str, str]], prefix: str) -> tuple[HyperNodeManifest, ...]:
    return fabric_hyper_nodes(roce_links(nodes, prefix), "roce-")


def ufm_hyper_nodes(ports: Any) -> tuple[HyperNodeManifest, ...]:
    return fabric_hyper_nodes(ufm_links(ports))
