"""The hub's placement file (``--placement-config``; also ``vglobal sim run``): cluster taints,
where datasets live, and what each cluster costs per resource and hour::

    taints:                      # cluster -> taints (a cluster label vglobal.io/taints adds more)
      gpu-east: [gpu-only=true:NoSchedule]
    datasets:                    # dataset -> clusters (a cluster label vglobal.io/dataset.<name> too)
      imagenet: [on-prem-a]
    costs:                       # cluster -> resource -> cost per unit and hour (memory: per GiB)
      cloud: {nvidia.com/gpu: 2.5, cpu: 0.01}
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from vglobal.model.errors import Problems
from vglobal.model.placement_prefs import Taint, parse_taints
from vglobal.model.quantity import BYTE_RESOURCES, unit_scale

_GIB = 1 << 30
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class PlacementConfig:
    taints: Mapping[str, tuple[Taint, ...]] = field(default_factory=lambda: _EMPTY)
    datasets: Mapping[str, frozenset[str]] = field(default_factory=lambda: _EMPTY)
    costs: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: _EMPTY)

    def __bool__(self) -> bool:
        return bool(self.taints or self.datasets or self.costs)

    def hourly_cost(self, cluster: str, request: Mapping[str, int]) -> float | None:
        """What ``request`` (canonical units) costs an hour on the cluster; None when the file
        gives the cluster no cost."""
        prices = self.costs.get(cluster)
        if prices is None:
            return None
        return sum(prices.get(r, 0.0) * units / per_unit(r) for r, units in request.items())


def per_unit(resource: str) -> int:
    """Canonical units in the unit a cost is given for (a core, a GPU, a GiB)."""
    return _GIB if resource in BYTE_RESOURCES else unit_scale(resource)


def _names(p: Problems, where: str, value: Any) -> list[str]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        p.add(where, "must be a list of names")
        return []
    return value


def parse_placement_config(doc: Any) -> PlacementConfig:
    """The file's document, checked; ValueError naming every wrong field."""
    p = Problems()
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ValueError("placement config: must be a mapping with taints, datasets, costs")
    for key in doc:
        if key not in ("taints", "datasets", "costs"):
            p.add(str(key), "unknown field (taints, datasets, costs)")
    taints: dict[str, tuple[Taint, ...]] = {}
    for cluster, items in (doc.get("taints") or {}).items():
        where = f"taints.{cluster}"
        taints[str(cluster)] = parse_taints(p, where, ",".join(_names(p, where, items)))
    datasets = {
        str(name): frozenset(_names(p, f"datasets.{name}", where))
        for name, where in (doc.get("datasets") or {}).items()
    }
    costs: dict[str, dict[str, float]] = {}
    for cluster, prices in (doc.get("costs") or {}).items():
        if not isinstance(prices, dict):
            p.add(f"costs.{cluster}", "must map resource names to a cost per unit and hour")
            continue
        got = costs[str(cluster)] = {}
        for r, v in prices.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                p.add(f"costs.{cluster}.{r}", f"{v!r} is not a cost (a number >= 0)")
                continue
            got[str(r)] = float(v)
    if p:
        raise ValueError("placement config: " + "; ".join(f"{f}: {m}" for f, m in p.items))
    return PlacementConfig(taints, datasets, costs)


def load_placement_config(path: str | Path | None) -> PlacementConfig:
    """The file at ``path`` (None: no file, today's placement), read again when it changes."""
    if path is None:
        return NO_CONFIG
    return _load(str(path), Path(path).stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> PlacementConfig:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as e:
        raise ValueError(f"placement config: not YAML: {e}") from e
    return parse_placement_config(doc)


NO_CONFIG = PlacementConfig()
