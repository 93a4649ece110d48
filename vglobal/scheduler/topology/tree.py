"""HyperNode tree over a session's node rows.

Volcano adds a synthetic ``<cluster-top-hypernode>`` one tier above the highest real tier that holds
every root and every node, so each node has a chain of HyperNodes up to the top and any two nodes
have a lowest common ancestor. A lower tier means a closer network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.scheduler.nodes import BoolArray, IntArray

TOP_HYPERNODE = "<cluster-top-hypernode>"
# session cache keys network-topology-aware fills: the tree, and how a subgroup's HyperNodes score
TREE_CACHE = "hypernode-tree"
SUBGROUP_ORDER = "hypernode-order/subgroup"


class HyperNodeTree:
    __slots__ = (
        "ancestors",
        "index",
        "leaf",
        "leaf_index",
        "max_tier",
        "member",
        "min_tier",
        "parent",
        "rows",
        "tier",
        "tier_names",
    )

    def __init__(self, hyper_nodes: Sequence[ResolvedHyperNode], node_row: Mapping[str, int]) -> None:
        top_tier = max((h.tier for h in hyper_nodes), default=0) + 1
        self.tier: dict[str, int] = {h.name: h.tier for h in hyper_nodes}
        self.tier[TOP_HYPERNODE] = top_tier
        self.tier_names: dict[str, int] = {}
        for h in hyper_nodes:
            if h.tier_name and self.tier_names.get(h.tier_name, h.tier + 1) > h.tier:
                self.tier_names[h.tier_name] = h.tier
        self.parent: dict[str, str | None] = {h.name: h.parent or TOP_HYPERNODE for h in hyper_nodes}
        self.parent[TOP_HYPERNODE] = None
        self.rows: dict[str, IntArray] = {
            h.name: np.array(sorted(node_row[n] for n in h.nodes if n in node_row), dtype=np.int64)
            for h in hyper_nodes
        }
        self.rows[TOP_HYPERNODE] = np.arange(len(node_row), dtype=np.int64)
        self.min_tier = min(self.tier.values())
        self.max_tier = top_tier
        # leaf[row]: the lowest-tier HyperNode holding the node (ties to the name), else the top
        self.leaf: list[str] = [TOP_HYPERNODE] * len(node_row)
        for h in sorted(hyper_nodes, key=lambda h: (-h.tier, h.name)):
            for row in self.rows[h.name]:
                self.leaf[int(row)] = h.name
        # dense forms for vectorised scoring: HyperNode index, row membership, each row's leaf
        self.index: dict[str, int] = {name: i for i, name in enumerate(sorted(self.tier))}
        self.member: BoolArray = np.zeros((len(self.index), len(node_row)), dtype=np.bool_)
        for name, i in self.index.items():
            self.member[i, self.rows[name]] = True
        self.leaf_index: IntArray = np.array([self.index[h] for h in self.leaf], dtype=np.int64)
        self.ancestors: dict[str, tuple[str, ...]] = {}
        for name in self.tier:
            chain = [name]
            while (up := self.parent[chain[-1]]) is not None:
                chain.append(up)
            self.ancestors[name] = tuple(chain)

    def __len__(self) -> int:
        return len(self.tier)

    def lca(self, a: str, b: str) -> str:
        mine = set(self.ancestors[a])
        for name in self.ancestors[b]:
            if name in mine:
                return name
        return TOP_HYPERNODE

    def lca_of_rows(self, rows: Sequence[int]) -> str | None:
        out: str | None = None
        for row in rows:
            leaf = self.leaf[int(row)]
            out = leaf if out is None else self.lca(out, leaf)
        return out

    def lca_tiers(self, name: str, rows: IntArray) -> IntArray:
        """tier(LCA(leaf(row), name)) for each row, walking up from ``name`` (depth numpy steps)."""
        out = np.full(rows.size, self.max_tier, dtype=np.int64)
        pending = np.ones(rows.size, dtype=np.bool_)
        for anc in self.ancestors[name]:
            member = self.member[self.index[anc], rows] & pending
            out[member] = self.tier[anc]
            pending &= ~member
            if not pending.any():
                break
        return out

    def by_tier(self, names: Sequence[str] | None = None, highest_tier: int | None = None) -> list[list[str]]:
        """HyperNodes grouped by tier ascending, names sorted within a tier."""
        limit = self.max_tier if highest_tier is None else highest_tier
        pool = self.tier if names is None else names
        groups: dict[int, list[str]] = {}
        for name in pool:
            if self.tier[name] <= limit:
                groups.setdefault(self.tier[name], []).append(name)
        return [sorted(groups[t]) for t in sorted(groups)]

    def subtree(self, name: str) -> list[str]:
        return [h for h, chain in self.ancestors.items() if name in chain]
