"""Dynamic MIG: which instance a vGPU request gets on a MIG-capable GPU.

A geometry is one allowed way to cut a GPU (e.g. 7 x 1g.5gb, or 3 x 2g.10gb + 1 x 1g.5gb). A GPU
that already serves instances keeps its geometry; an untouched GPU takes the first geometry in the
config that can serve the request. Inside the geometry the smallest instance with enough memory and
a free slot is used (best fit), and the GPU's used memory grows by the instance's memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vglobal.scheduler.api import MigInstance

Geometry = tuple[MigInstance, ...]


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


@dataclass(slots=True)
class MigState:
    """One GPU's MIG use: the geometry in force (None = untouched) and instances taken by name."""

    geometry: int | None = None
    used: dict[str, int] = field(default_factory=dict)


def mig_choice(
    state: MigState, groups: Sequence[Geometry], memory_mib: int, factor: int = 1
) -> tuple[int, MigInstance] | None:
    """(geometry index, instance) for a request of ``memory_mib``, or None if the GPU cannot serve it."""
    need = memory_mib * factor if factor > 1 else memory_mib
    options = [state.geometry] if state.geometry is not None else list(range(len(groups)))
    for g in options:
        fitting = [
            inst
            for inst in groups[g]
            if inst.memory_mib >= need and state.used.get(inst.name, 0) < inst.count
        ]
        if fitting:
            return g, min(fitting, key=lambda inst: (inst.memory_mib, inst.name))
    return None
