"""Dynamic MIG: which instance a vGPU request gets on a MIG-capable GPU. The one MIG rule that both
the local scheduler's deviceshare plugin and the hub's admission apply (pure).

A geometry is one allowed way to cut a GPU (e.g. 7 x 1g.5gb, or 3 x 2g.10gb + 1 x 1g.5gb). A GPU
that already serves instances keeps its geometry; an untouched GPU takes the first geometry of its
list that can serve the request. Inside the geometry the smallest instance with enough memory and
a free slot is used (best fit), whether or not its profile is in use yet: Volcano's own design
(docs/design/dynamic-mig.md) keeps every instance of the geometry for future use, which its
pickFromGroup, offering only profiles already in use, does not do (a bug we do not copy).
Volcano's ``GPUMemoryFactor``: requests are in units of that many MiB, so the request is
multiplied by it and the card's used memory grows by the instance's memory divided by it
(MIGFactory.TryAddPod / AddPod).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from vglobal.model.gpu_fit import BoolArray, Cards, DeviceRequest, vgpu_checks


@dataclass(frozen=True, slots=True)
class MigInstance:
    """One MIG instance profile of a geometry (``1g.5gb``: its memory, how many a geometry has)."""

    name: str
    memory_mib: int
    count: int


Geometry = tuple[MigInstance, ...]


@dataclass(slots=True)
class MigState:
    """One GPU's MIG use: the geometry in force (None = untouched) and instances taken by name."""

    geometry: int | None = None
    used: dict[str, int] = field(default_factory=dict)

    def copy(self) -> MigState:
        return MigState(self.geometry, dict(self.used))


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


def mig_need(req: DeviceRequest, card_memory_mib: int) -> int:
    """The memory one MIG vGPU of ``req`` asks of a card (a percentage of it, else all of it)."""
    return req.memory_mib or card_memory_mib * (req.memory_percent or 100) // 100


def mig_pick(
    req: DeviceRequest, state: MigState, groups: Sequence[Geometry], card_memory_mib: int, factor: int
) -> tuple[int, MigInstance] | None:
    """The instance one vGPU of a MIG request takes on one card, or None."""
    return mig_choice(state, groups, mig_need(req, card_memory_mib), factor)


def instance_memory(inst: MigInstance, factor: int) -> int:
    """What taking ``inst`` adds to its card's used memory (in the request's units)."""
    return inst.memory_mib // factor if factor > 1 else inst.memory_mib


def mig_cards_ok(req: DeviceRequest, cards: Cards, mig_capable: BoolArray, model_ok: BoolArray) -> BoolArray:
    """Cards of a MIG node a vGPU request may look at: MIG-capable (a card without geometries
    serves no instance), allowed by the pod's model and UUID lists, and passing the checks Volcano
    makes of every card before it asks the MIG factory."""
    ok: BoolArray = cards.present & model_ok & mig_capable
    ok &= vgpu_checks(req, cards)
    return ok


def mig_use(state: MigState, geometry: int | None, name: str, sign: int) -> None:
    """An instance taken (+1) or given back (-1); the GPU is untouched again once none is used."""
    left = state.used.get(name, 0) + sign
    if left > 0:
        state.used[name] = left
    else:
        state.used.pop(name, None)
    if sign > 0 and geometry is not None:
        state.geometry = geometry
    if not state.used:
        state.geometry = None
