"""What the dispatcher keeps of member clusters between cycles, and their admission snapshots."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.orm import Session

from vglobal.admission import ClusterSnap, Gang, NodeSnap
from vglobal.admission.inputs import cluster_snap, device_tables, node_snap
from vglobal.model.cards import CardFree
from vglobal.model.phases import ClusterState
from vglobal.model.records import ClusterRow
from vglobal.store.repo import clusters as clusters_repo


@dataclass
class ClusterCache:
    """Cluster rows as last read, and each node's snapshot entry, reused while its reported
    inventory and free capacity hold: comparing the reported dicts is far cheaper than converting
    them again."""

    # name -> ((row version, inventory digest), row)
    rows: dict[str, tuple[tuple[str, str], ClusterRow]] = field(default_factory=dict)
    nodes: dict[tuple[str, str], tuple[dict[str, Any], Any, NodeSnap]] = field(default_factory=dict)
    devices: dict[str, tuple[Any, Mapping[str, tuple[CardFree, ...]]]] = field(default_factory=dict)

    def read(self, *, session: Session) -> list[ClusterRow]:
        """Every cluster row, read again only where it was written since, and its node inventory
        only where that changed (agents report every few seconds; the inventory rarely moves)."""
        versions = clusters_repo.versions(session=session)
        kept = self.rows
        stale = [name for name, v in versions.items() if name not in kept or kept[name][0] != v]
        same = [n for n in stale if n in kept and kept[n][0][1] == versions[n][1]]
        if same:
            for row in clusters_repo.list_clusters(session=session, names=same, with_nodes=False):
                kept[row.name] = (versions[row.name], replace(row, nodes=kept[row.name][1].nodes))
        fresh = [n for n in stale if n not in same]
        if fresh:
            for row in clusters_repo.list_clusters(session=session, names=fresh):
                kept[row.name] = (versions[row.name], row)
        self.rows = {name: kept[name] for name in versions if name in kept}
        rows = [entry[1] for entry in self.rows.values()]
        if len(self.nodes) > sum(len(c.nodes) for c in rows):  # nodes or clusters went away
            wanted = {(c.name, n["name"]) for c in rows for n in c.nodes}
            self.nodes = {k: v for k, v in self.nodes.items() if k in wanted}
        return rows

    def node(self, cluster: str, node: dict[str, Any], free: dict[str, dict[str, int]]) -> NodeSnap:
        name = node["name"]
        left = free.get(name)
        key = (cluster, name)
        hit = self.nodes.get(key)
        if hit is not None and hit[0] == node and hit[1] == left:
            return hit[2]
        snap = node_snap(node, left)
        self.nodes[key] = (node, left, snap)
        return snap

    def cards(self, row: ClusterRow) -> Mapping[str, tuple[CardFree, ...]]:
        """The cluster's reported card tables, converted again only when they changed."""
        if not row.devices:
            return {}
        hit = self.devices.get(row.name)
        if hit is not None and hit[0] == row.devices:
            return hit[1]
        got = device_tables(row.devices)
        self.devices[row.name] = (row.devices, got)
        return got

    def snap(
        self,
        row: ClusterRow,
        unplaced: Sequence[Gang],
        unplaced_cards: tuple[tuple[Gang, tuple[Mapping[str, str], ...]], ...] = (),
    ) -> ClusterSnap:
        """The cluster as admission sees it, with the gangs admitted to it but not placed yet (and
        those of them that take GPU cards, with their GPU annotations)."""
        return cluster_snap(
            name=row.name,
            labels=row.labels,
            nodes=(self.node(row.name, n, row.free) for n in row.nodes),
            schedulable=row.effective_state == ClusterState.Ready,
            hypernodes=row.hypernodes,
            devices=self.cards(row),
            unplaced=unplaced,
            unplaced_cards=unplaced_cards,
            pools=row.pools,
        )
