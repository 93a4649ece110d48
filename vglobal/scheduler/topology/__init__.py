"""The HyperNode tree as the scheduler sees it: node rows per HyperNode, tiers, LCA, synthetic top."""

from vglobal.scheduler.topology.tree import SUBGROUP_ORDER, TOP_HYPERNODE, TREE_CACHE, HyperNodeTree

__all__ = ["SUBGROUP_ORDER", "TOP_HYPERNODE", "TREE_CACHE", "HyperNodeTree"]
