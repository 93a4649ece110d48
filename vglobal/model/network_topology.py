"""A ``networkTopology`` constraint (a job's, or a task partition's), validated as Volcano's webhook does."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import StrictStr

from vglobal.model.errors import Problems
from vglobal.model.k8s import Int32, Model


@dataclass(frozen=True, kw_only=True)
class NetworkTopology:
    mode: str = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str | None = None


class NetworkTopologySpec(Model):
    mode: StrictStr = "hard"
    highest_tier_allowed: Int32 | None = None
    highest_tier_name: StrictStr | None = None


def build_network_topology(
    p: Problems, base: str, spec: NetworkTopologySpec | None
) -> NetworkTopology | None:
    """The constraint at ``base`` (e.g. ``spec.networkTopology``), every problem named by its field."""
    if spec is None:
        return None
    if spec.mode not in ("hard", "soft"):
        p.add(f"{base}.mode", f'must be "hard" or "soft", not "{spec.mode}"')
    if spec.highest_tier_allowed is not None and spec.highest_tier_name is not None:
        p.add(base, "highestTierAllowed and highestTierName must not both be set")
    if spec.highest_tier_allowed is not None and spec.highest_tier_allowed < 0:
        p.add(f"{base}.highestTierAllowed", "must be >= 0")
    if spec.highest_tier_name is not None and not spec.highest_tier_name:
        p.add(f"{base}.highestTierName", "must not be empty")
    return NetworkTopology(
        mode=spec.mode,
        highest_tier_allowed=spec.highest_tier_allowed,
        highest_tier_name=spec.highest_tier_name,
    )
