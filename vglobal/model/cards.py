"""A node's GPU cards as its agent reports them to the hub, and the hub's working copy of them.

The agent reports what is left of each card (CardFree; for a MIG-capable card also its geometries,
the one in force and the instances taken: all that the MIG rule reads) and, per placed pod, the
cards it holds (CardUse). NodeCards rebuilds the arrays the shared rules read (gpu_fit.cards_fit, card_order,
mig_fit.mig_pick) and takes or gives back one pod's cards exactly as the agent's device table does
(vglobal.scheduler.devices.table), in the order of the agent's deviceshare.SchedulePolicy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from vglobal.model.gpu_fit import (
    FREE,
    HAMI,
    MIG,
    Cards,
    DeviceRequest,
    IntArray,
    card_order,
    cards_allowed,
    cards_fit,
    count_holder,
    holds_card,
    memory_needed,
)
from vglobal.model.mig_fit import (
    Geometry,
    MigInstance,
    MigState,
    instance_memory,
    mig_cards_ok,
    mig_pick,
    mig_use,
)


@dataclass(frozen=True, slots=True)
class MigCard:
    """A MIG-capable card's MIG side: the geometries it may take, the one in force (None: untouched),
    the instances taken by profile name, and the memory factor requests are scaled by."""

    groups: tuple[Geometry, ...]
    geometry: int | None = None
    used: tuple[tuple[str, int], ...] = ()
    factor: int = 1

    def state(self) -> MigState:
        return MigState(self.geometry, dict(self.used))

    def to_json(self) -> list[object]:
        groups = [[[i.name, i.memory_mib, i.count] for i in g] for g in self.groups]
        used = [[n, c] for n, c in self.used]
        return [groups, -1 if self.geometry is None else self.geometry, used, self.factor]

    @classmethod
    def from_json(cls, raw: Sequence[object]) -> MigCard:
        groups, geometry, used, factor = raw
        return cls(
            tuple(tuple(MigInstance(str(n), int(m), int(c)) for n, m, c in g) for g in groups),  # type: ignore[attr-defined]
            None if int(str(geometry)) < 0 else int(str(geometry)),
            tuple((str(n), int(c)) for n, c in used),  # type: ignore[attr-defined]
            int(str(factor)),
        )


@dataclass(frozen=True, slots=True)
class CardFree:
    """One card as its agent reports it to the hub: what is left of it."""

    memory_mib: int
    free_memory_mib: int
    free_cores: int  # percent of the card's compute
    free_slots: int  # vGPU tasks it may still take
    split: int
    model: str = ""
    mode: int = FREE
    mig: MigCard | None = None  # a MIG-capable card's geometries and instances taken
    policy: str = ""  # the agent's deviceshare.SchedulePolicy: the order a pod gets its cards in
    uuid: str = ""  # the GPU's UUID (what volcano.sh/vgpu-use-gpuuuid names)
    holders: tuple[str, ...] = ()  # per vGPU pod using the card, its PodGroup (job uid), sorted

    def to_json(self) -> list[object]:
        out: list[object] = [self.memory_mib, self.free_memory_mib, self.free_cores, self.free_slots,
                             self.split, self.model, self.mode,
                             None if self.mig is None else self.mig.to_json(), self.policy, self.uuid,
                             list(self.holders)]  # fmt: skip
        while len(out) > 7 and out[-1] in (None, "", []):
            out.pop()  # older rows end early: the defaults are left out
        return out

    @classmethod
    def from_json(cls, raw: Sequence[object]) -> CardFree:
        m, fm, fc, fs, sp, model, mode = raw[:7]
        mig = MigCard.from_json(raw[7]) if len(raw) > 7 and raw[7] is not None else None  # type: ignore[arg-type]
        policy = str(raw[8]) if len(raw) > 8 else ""
        uuid = str(raw[9]) if len(raw) > 9 else ""
        holders = tuple(str(h) for h in raw[10]) if len(raw) > 10 else ()  # type: ignore[attr-defined]
        return cls(int(str(m)), int(str(fm)), int(str(fc)), int(str(fs)), int(str(sp)), str(model),
                   int(str(mode)), mig, policy, uuid, holders)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CardUse:
    """One card a placed pod holds, as its agent granted it (a MIG instance names its geometry)."""

    device: int
    memory_mib: int
    cores: int
    whole: bool = False
    geometry: int | None = None
    instance: str = ""

    def to_json(self) -> list[object]:
        return [self.device, self.memory_mib, self.cores, self.whole,
                -1 if self.geometry is None else self.geometry, self.instance]  # fmt: skip

    @classmethod
    def from_json(cls, raw: Sequence[object]) -> CardUse:
        d, m, c, w, g, i = raw
        geometry = int(str(g))
        return cls(int(str(d)), int(str(m)), int(str(c)), bool(w), None if geometry < 0 else geometry, str(i))


def cards_of(free: Sequence[CardFree]) -> Cards:
    """The arrays ``cards_fit`` reads, rebuilt from reported cards (copies: a caller may take from them)."""
    n = len(free)

    def col(name: str) -> IntArray:
        return np.array([getattr(c, name) for c in free], dtype=np.int64).reshape(n)

    memory, split = col("memory_mib"), col("split")
    return Cards(
        present=np.ones(n, dtype=np.bool_),
        memory=memory,
        split=split,
        used_num=split - col("free_slots"),
        used_mem=memory - col("free_memory_mib"),
        used_cores=100 - col("free_cores"),
        mode=col("mode"),
    )


_NO_HOLDERS: dict[str, int] = {}  # shared, never changed (apply copies a card's counts first)

# policies whose card order is not by index alone (gpu_fit.card_order); any other: the highest first
_ORDERED = frozenset({"binpack", "spread", "fgd", "bestfit"})


@dataclass(frozen=True, slots=True)
class NodeCards:
    """One node's cards as the hub works on them: taking returns a new value, the old stays valid."""

    cards: Cards
    models: tuple[str, ...]
    mig: tuple[MigCard | None, ...]  # the static MIG side per card (None: not MIG-capable)
    states: tuple[MigState | None, ...]  # the MIG use per card now
    policy: str = ""  # the order a pod gets its cards in (gpu_fit.card_order)
    uuids: tuple[str, ...] = ()
    holders: tuple[dict[str, int], ...] = ()  # per card, vGPU pods using it per PodGroup

    @classmethod
    def of(cls, free: Sequence[CardFree]) -> NodeCards:
        return cls(
            cards_of(free),
            tuple(c.model for c in free),
            tuple(c.mig for c in free),
            tuple(None if c.mig is None else c.mig.state() for c in free),
            free[0].policy if free else "",
            tuple(c.uuid for c in free),
            tuple(dict(Counter(c.holders)) if c.holders else _NO_HOLDERS for c in free),
        )

    @property
    def most_free_mib(self) -> int:
        c = self.cards
        return int((c.memory - c.used_mem).max(initial=0))

    @property
    def mig_node(self) -> bool:
        """The node is in MIG mode (its last card's, gpu_fit.mig_node): its vGPUs are MIG instances."""
        return bool(self.mig) and self.mig[-1] is not None

    def fits(self, req: DeviceRequest, group: str = "") -> IntArray:
        """The cards one pod of ``req`` (of PodGroup ``group``) would get, in the agent's order (its
        SchedulePolicy's; by default the highest index first); fewer than ``req.units`` if the node
        cannot take it."""
        if req.filtered:
            allowed = cards_allowed(req, self.models, self.uuids, self.holders, group)
        else:
            allowed = self.cards.present
        if req.whole:
            ok = cards_fit(req, self.cards, allowed)
        elif not req.mode_ok(self.mig_node):
            return np.zeros(0, dtype=np.int64)
        elif self.mig_node:
            capable = np.array([m is not None for m in self.mig], dtype=np.bool_)
            ok = mig_cards_ok(req, self.cards, capable, allowed)
            for k in np.flatnonzero(ok).tolist():
                ok[k] = self._pick(req, k) is not None
        else:
            ok = cards_fit(req, self.cards, allowed)
        if self.policy not in _ORDERED:  # the default order: the highest index first
            by_index: IntArray = np.flatnonzero(ok)[::-1][: req.units]
            return by_index
        key = np.where(ok, card_order(self.cards, self.policy), np.inf)
        order = np.argsort(key, kind="stable")[: req.units]
        out: IntArray = order[ok[order]]
        return out

    def _pick(self, req: DeviceRequest, k: int) -> tuple[int, MigInstance] | None:
        mig, state = self.mig[k], self.states[k]
        assert mig is not None and state is not None
        return mig_pick(req, state, mig.groups, int(self.cards.memory[k]), mig.factor)

    def take(self, req: DeviceRequest, group: str = "") -> NodeCards | None:
        """The cards after one pod of ``req`` (of PodGroup ``group``) takes its own, or None if the
        node cannot take it."""
        idx = self.fits(req, group)
        if idx.size < req.units:
            return None
        uses = []
        for k in idx.tolist():
            if req.whole:
                uses.append(CardUse(k, int(self.cards.memory[k]), 100, whole=True))
            elif self.mig_node:
                choice = self._pick(req, k)
                mig = self.mig[k]
                assert choice is not None and mig is not None
                g, inst = choice
                uses.append(
                    CardUse(k, instance_memory(inst, mig.factor), req.cores, geometry=g, instance=inst.name)
                )
            else:
                uses.append(CardUse(k, int(memory_needed(req, self.cards.memory)[k]), req.cores))
        return self.apply(uses, +1, group)

    def emptied(self) -> NodeCards:
        """The same cards with nothing on them."""
        zero = np.zeros_like(self.cards.used_num)
        cards = replace(self.cards, used_num=zero, used_mem=zero, used_cores=zero, mode=zero)
        states = tuple(None if m is None else MigState() for m in self.mig)
        return replace(self, cards=cards, states=states, holders=tuple({} for _ in self.holders))

    def apply(self, uses: Sequence[CardUse], sign: int, group: str = "") -> NodeCards:
        """The cards after pods of PodGroup ``group`` take (+1) or give back (-1) these uses (the
        device table's apply)."""
        c = self.cards
        used_num, used_mem, used_cores, mode = (
            c.used_num.copy(), c.used_mem.copy(), c.used_cores.copy(), c.mode.copy()
        )  # fmt: skip
        states: Sequence[MigState | None] = self.states
        if any(s is not None for s in states):  # MIG states change in place: copies
            states = [None if s is None else s.copy() for s in states]
        # the touched cards' counts are copied before they change
        holders = list(self.holders) if group and self.holders and any(map(holds_card, uses)) else None
        for u in uses:
            d = u.device
            if d >= used_num.size:
                continue  # a card the node no longer reports
            used_num[d] += sign
            used_mem[d] += sign * u.memory_mib
            used_cores[d] += sign * u.cores
            state = states[d]
            if u.instance and state is not None:
                mig_use(state, u.geometry, u.instance, sign)
            if holders is not None and holds_card(u) and d < len(holders):
                holders[d] = dict(holders[d])
                count_holder(holders[d], group, sign)
            if u.whole:
                continue
            mode[d] = FREE if used_num[d] <= 0 else (MIG if u.instance else HAMI)
        cards = replace(c, used_num=used_num, used_mem=used_mem, used_cores=used_cores, mode=mode)
        kept = self.holders if holders is None else tuple(holders)
        return replace(self, cards=cards, states=tuple(states), holders=kept)
