"""Dynamic MIG geometries of the deviceshare plugin: the known geometries per GPU model
(``deviceshare.KnownMigGeometries``) and the default A100/H100 shapes. Which instance a request gets
is the shared rule of vglobal.model.mig_fit (the hub's admission applies it too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.model.mig_fit import Geometry, MigInstance, MigState, mig_choice

__all__ = [
    "DEFAULT_MIG",
    "Geometry",
    "MigConfig",
    "MigState",
    "mig_choice",
    "mig_config_of",
    "parse_mig_config",
]


@dataclass(frozen=True, slots=True)
class MigConfig:
    entries: tuple[tuple[tuple[str, ...], tuple[Geometry, ...]], ...]  # (models, allowed geometries)
    memory_factor: int = 1  # Volcano's GPUMemoryFactor: requests are in units of this many MiB

    def geometries(self, model: str, memory_mib: int) -> tuple[Geometry, ...]:
        for models, groups in self.entries:
            if any(m and m.lower() in model.lower() for m in models):
                return groups
        # no model listed: the default A100/H100 shapes scaled to the card's memory
        return _scaled_default(memory_mib)


def _scaled_default(memory_mib: int) -> tuple[Geometry, ...]:
    if memory_mib <= 0:
        return ()
    slice_mib = memory_mib // 8  # a 1g slice is 1/8 of the memory on A100/H100 (5 GB of 40 GB)
    gb = max(1, slice_mib // 1024)
    one = MigInstance(f"1g.{gb}gb", slice_mib, 7)
    return (
        (one,),
        (MigInstance(f"2g.{2 * gb}gb", 2 * slice_mib, 3), MigInstance(f"1g.{gb}gb", slice_mib, 1)),
        (MigInstance(f"3g.{4 * gb}gb", 4 * slice_mib, 2),),
        (MigInstance(f"7g.{8 * gb}gb", memory_mib, 1),),
    )


DEFAULT_MIG = MigConfig(entries=())


def parse_mig_config(raw: Any, memory_factor: int = 1) -> MigConfig:
    """``[{models: [...], allowedGeometries: [[{name, memory, count}, ...], ...]}, ...]``."""
    if not raw:
        return MigConfig((), memory_factor)
    entries = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ValueError(f"knownMigGeometries[{i}]: expected a mapping")
        models = tuple(str(m) for m in item.get("models") or ())
        groups = []
        for j, group in enumerate(item.get("allowedGeometries") or ()):
            try:
                groups.append(
                    tuple(MigInstance(str(g["name"]), int(g["memory"]), int(g["count"])) for g in group)
                )
            except (KeyError, TypeError, ValueError):
                raise ValueError(
                    f"knownMigGeometries[{i}].allowedGeometries[{j}]: each instance needs name, memory, count"
                ) from None
        entries.append((models, tuple(groups)))
    return MigConfig(tuple(entries), memory_factor)


def mig_config_of(arguments: Mapping[str, Any]) -> MigConfig:
    """The MIG config the deviceshare plugin's arguments give (the agent reports cards with it)."""
    raw = arguments.get("deviceshare.GPUMemoryFactor")
    try:
        factor = 1 if raw is None else int(float(raw))
    except (TypeError, ValueError):
        factor = 1
    return parse_mig_config(arguments.get("deviceshare.KnownMigGeometries"), factor)
