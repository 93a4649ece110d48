"""The HyperNode tree as the scheduler sees it: node rows per HyperNode, tiers, LCA, synthetic top."""

from vglobal.scheduler.topology.tree import TOP_HYPERNODE, HyperNodeTree

__all__ = ["TOP_HYPERNODE", "HyperNodeTree"]
