"""A cluster's HyperNode tree from every source together: HyperNode objects, and what the enabled
discovery sources find (node labels, RoCE LLDP labels, the UFM ports the agent fetched)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vglobal.model.errors import ManifestError
from vglobal.model.fabric_topology import roce_hyper_nodes
from vglobal.model.hypernode import (
    HyperNodeManifest,
    ResolvedHyperNode,
    discover_hyper_nodes,
    parse_hyper_nodes,
    resolve_hyper_nodes,
)
from vglobal.model.topology_sources import DEFAULT_ROCE_PREFIX, discovery_plan


def cluster_hyper_nodes(
    manifests: Sequence[Any],
    discovery: Mapping[str, Any] | None,
    nodes: Mapping[str, Mapping[str, str]],
    fetched: Mapping[str, Sequence[HyperNodeManifest]] | None = None,
) -> tuple[ResolvedHyperNode, ...]:
    """Objects and discovered HyperNodes resolved as one tree; a name found by two sources is an
    error naming both. ``fetched``: the remote sources' last good answer (by source name)."""
    parsed = list(parse_hyper_nodes(manifests))
    owner = {m.name: "spec.hyperNodes" for m in parsed}
    plan = discovery_plan(discovery)
    for source in plan.sources:
        if source.source == "label":
            found = discover_hyper_nodes(source.config, nodes)
        elif source.source == "roce":
            found = roce_hyper_nodes(nodes, str(source.config.get("switchLabelPrefix", DEFAULT_ROCE_PREFIX)))
        else:
            found = tuple((fetched or {}).get(source.source, ()))
        for hn in found:
            if hn.name in owner:
                raise ManifestError.one(
                    "spec.hyperNodes",
                    f'HyperNode "{hn.name}" comes from both {owner[hn.name]} and {source.source} discovery',
                )
            owner[hn.name] = f"{source.source} discovery"
        parsed.extend(found)
    return resolve_hyper_nodes(parsed, nodes)
