"""Per-GPU usage over all nodes of a session: arrays of shape (nodes, most GPUs on a node).

Fit and score are vectorised over candidate nodes for hami-core vGPUs and whole GPUs; MIG GPUs keep
a small per-device state (their geometry) and are checked one by one. The rules are the shared
ones of vglobal.model.gpu_fit (the node's sharing mode, the card checks, the pod's model and UUID
lists and podgroup spread policy) and vglobal.model.mig_fit; the hub's admission applies them too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vglobal.model.gpu_fit import (
    FREE,
    HAMI,
    MIG,
    Cards,
    DeviceRequest,
    card_order,
    cards_allowed,
    cards_fit,
    count_holder,
    free_milli,
    holds_card,
    memory_needed,
    mig_node,
    modes_ok,
)
from vglobal.model.mig_fit import MigState, instance_memory, mig_cards_ok, mig_pick, mig_use
from vglobal.scheduler.api import Grant, MigInstance, NodeSpec
from vglobal.scheduler.devices.inventory import GPUS_EXTENSION, GpuDevice, node_gpus
from vglobal.scheduler.devices.mig import MigConfig
from vglobal.scheduler.nodes import BoolArray, FloatArray, IntArray


class DeviceTable:
    def __init__(self, specs: Sequence[NodeSpec], mig: MigConfig) -> None:
        inventory = [node_gpus(s) for s in specs]
        n = len(specs)
        g = max((len(d) for d in inventory), default=0) or 1
        self.mig_config = mig
        self.devices: list[tuple[GpuDevice, ...]] = inventory
        # a node whose GPUs were listed (or derived from vgpu capacity) is device-managed
        self.managed: BoolArray = np.array(
            [
                bool(s.extensions.get(GPUS_EXTENSION)) or bool(d and d[0].memory_mib)
                for s, d in zip(specs, inventory, strict=True)
            ],
            dtype=np.bool_,
        )
        self.present: BoolArray = np.zeros((n, g), dtype=np.bool_)
        self.memory: IntArray = np.zeros((n, g), dtype=np.int64)
        self.split: IntArray = np.zeros((n, g), dtype=np.int64)
        self.mig_capable: BoolArray = np.zeros((n, g), dtype=np.bool_)
        self.models: list[list[str]] = []
        self.uuids: list[list[str]] = []
        for row, devs in enumerate(inventory):
            for d in devs:
                self.present[row, d.index] = True
                self.memory[row, d.index] = d.memory_mib
                self.split[row, d.index] = d.split
                self.mig_capable[row, d.index] = d.mig
            self.models.append([d.model for d in devs] + [""] * (g - len(devs)))
            self.uuids.append([d.uuid for d in devs] + [""] * (g - len(devs)))
        self.used_num: IntArray = np.zeros((n, g), dtype=np.int64)
        self.used_mem: IntArray = np.zeros((n, g), dtype=np.int64)
        self.used_cores: IntArray = np.zeros((n, g), dtype=np.int64)
        self.mode: IntArray = np.zeros((n, g), dtype=np.int64)
        self.mig_state: dict[tuple[int, int], MigState] = {}
        # per node: in MIG mode (its vGPUs are MIG instances), as its last card is
        self.mig_node: BoolArray = mig_node(self.present, self.mig_capable)
        # (node, device) -> positions of the MIG instances taken (Volcano's UsedIndex)
        self.mig_slots: dict[tuple[int, int], set[int]] = {}
        # (node, device) -> vGPU pods using it per PodGroup (the podgroup spread policy)
        self.holders: dict[tuple[int, int], dict[str, int]] = {}
        self._model_masks: dict[tuple[frozenset[str], frozenset[str]], BoolArray] = {}

    @property
    def width(self) -> int:
        return int(self.present.shape[1])

    def model_mask(self, use: frozenset[str], nouse: frozenset[str]) -> BoolArray:
        """(nodes, width): devices whose model the use / nouse type lists allow."""
        key = (use, nouse)
        got = self._model_masks.get(key)
        if got is None:
            probe = DeviceRequest(use_types=use, nouse_types=nouse)
            got = np.array([[probe.model_ok(m) for m in row] for row in self.models], dtype=np.bool_)
            self._model_masks[key] = got
        return got

    def memory_needed(self, req: DeviceRequest, rows: IntArray) -> IntArray:
        """Per device, the memory one vGPU of ``req`` takes (whole card when none is given)."""
        return memory_needed(req, self.memory[rows])

    def _cards(self, rows: IntArray) -> Cards:
        """These nodes' devices in the shared rules' form (lines = nodes, columns = devices)."""
        return Cards(
            self.present[rows],
            self.memory[rows],
            self.split[rows],
            self.used_num[rows],
            self.used_mem[rows],
            self.used_cores[rows],
            self.mode[rows],
        )

    def _allowed(self, req: DeviceRequest, rows: IntArray, group: str) -> BoolArray:
        """(len(rows), width): the devices the pod's lists let it look at (gpu_fit.cards_allowed)."""
        if not (req.uuid_filter or req.spread):
            return self.model_mask(req.use_types, req.nouse_types)[rows]
        empty: dict[str, int] = {}
        return np.array(
            [
                cards_allowed(
                    req,
                    self.models[row],
                    self.uuids[row],
                    [self.holders.get((row, d), empty) for d in range(self.width)],
                    group,
                )
                for row in rows.tolist()
            ],
            dtype=np.bool_,
        ).reshape(rows.size, self.width)

    def device_ok(self, req: DeviceRequest, rows: IntArray, group: str = "") -> BoolArray:
        """(len(rows), width): which devices could take one unit of the request of a pod of
        PodGroup ``group``: on a node in MIG mode a vGPU is a MIG instance; a pod naming another
        vgpu-mode than the node's gets none there."""
        cards = self._cards(rows)
        allowed = self._allowed(req, rows, group)
        if req.whole:
            return cards_fit(req, cards, allowed)
        mig = self.mig_node[rows]
        ok = np.where(mig[:, None], False, cards_fit(req, cards, allowed))
        if mig.any():
            ok |= mig_cards_ok(req, cards, self.mig_capable[rows] & mig[:, None], allowed)
            ok &= self._mig_ok(req, rows)
        if req.mode is not None:
            ok &= modes_ok(req, mig)[:, None]
        return ok

    def _mig_ok(self, req: DeviceRequest, rows: IntArray) -> BoolArray:
        """True on devices of hami-core nodes; on MIG nodes where the MIG rule finds an instance."""
        out = np.ones((rows.size, self.width), dtype=np.bool_)
        for i, row in enumerate(rows.tolist()):
            if not self.mig_node[row]:
                continue
            out[i] = False
            for dev in np.flatnonzero(self.mig_capable[row]).tolist():
                out[i, dev] = self._mig_pick(req, row, dev) is not None
        return out

    def _mig_pick(self, req: DeviceRequest, row: int, dev: int) -> tuple[int, MigInstance] | None:
        gpu = self.devices[row][dev]
        groups = self.mig_config.geometries(gpu.model, gpu.memory_mib)
        state = self.mig_state.get((row, dev), MigState())
        return mig_pick(req, state, groups, gpu.memory_mib, self.mig_config.memory_factor)

    def node_ok(self, req: DeviceRequest, rows: IntArray, group: str = "") -> BoolArray:
        if req.empty:
            return np.ones(rows.size, dtype=np.bool_)
        need = req.whole or req.number
        managed = self.managed[rows]
        if req.whole and not req.number:
            # nodes without a device list keep plain nvidia.com/gpu counting (the resource column)
            ok: BoolArray = ~managed
            if managed.any():
                sub = rows[managed]
                ok[managed] = self.device_ok(req, sub, group).sum(axis=1) >= need
            return ok
        ok = self.device_ok(req, rows, group).sum(axis=1) >= need
        ok &= managed
        return ok

    def order_key(self, req: DeviceRequest, rows: IntArray, policy: str) -> FloatArray:
        """Smaller first (the shared rule, gpu_fit.card_order)."""
        return card_order(self._cards(rows), policy)

    def free_milli(self, rows: IntArray) -> IntArray:
        """Per device, the free share of the GPU in milli (the smaller of compute and memory)."""
        return free_milli(self._cards(rows))

    def chosen(self, req: DeviceRequest, rows: IntArray, policy: str, group: str = "") -> IntArray:
        """(len(rows), units) device indices each node would give, best first; -1 where it cannot."""
        units = req.whole or req.number
        ok = self.device_ok(req, rows, group)
        key = np.where(ok, self.order_key(req, rows, policy), np.inf)
        order = np.argsort(key, axis=1, kind="stable")[:, :units]
        got = np.take_along_axis(ok, order, axis=1)
        out: IntArray = np.where(got, order, -1)
        return out

    def grants(self, req: DeviceRequest, row: int, policy: str, group: str = "") -> list[Grant] | None:
        if req.empty:
            return []
        rows = np.array([row], dtype=np.int64)
        if req.whole and not req.number and not self.managed[row]:
            return []
        picked = self.chosen(req, rows, policy, group)[0]
        if (picked < 0).any():
            return None
        out = []
        for dev in picked.tolist():
            if req.whole:
                out.append(Grant(dev, int(self.memory[row, dev]), 100, whole=True))
            elif self.mig_node[row]:
                choice = self._mig_pick(req, row, dev)
                assert choice is not None
                geometry, inst = choice
                mem = instance_memory(inst, self.mig_config.memory_factor)
                at = self._position(row, dev, geometry, inst)
                out.append(Grant(dev, mem, req.cores, geometry=geometry, instance=inst, position=at))
            else:
                mem = int(self.memory_needed(req, rows)[0, dev])
                out.append(Grant(dev, mem, req.cores))
        return out

    def _position(self, row: int, dev: int, geometry: int, inst: MigInstance) -> int:
        """Where ``inst`` sits in its geometry (Volcano's getPosition): the slots of the profiles
        listed before it, then the first slot of its own profile no pod on the card holds."""
        gpu = self.devices[row][dev]
        profiles = self.mig_config.geometries(gpu.model, gpu.memory_mib)[geometry]
        offset = 0
        for p in profiles:
            if p.name == inst.name:
                break
            offset += p.count
        taken = self.mig_slots.get((row, dev), set())
        free = next((i for i in range(inst.count) if offset + i not in taken), 0)
        return offset + free

    def apply(self, row: int, grants: Sequence[Grant], sign: int, group: str = "") -> None:
        """Grants of a pod of PodGroup ``group`` taken (+1) or given back (-1)."""
        for g in grants:
            d = g.device
            self.used_num[row, d] += sign
            self.used_mem[row, d] += sign * g.memory_mib
            self.used_cores[row, d] += sign * g.cores
            if g.instance is not None:
                mig_use(self.mig_state.setdefault((row, d), MigState()), g.geometry, g.instance.name, sign)
                slots = self.mig_slots.setdefault((row, d), set())
                if sign > 0:
                    slots.add(g.position)
                else:
                    slots.discard(g.position)
            if group and holds_card(g):
                count_holder(self.holders.setdefault((row, d), {}), group, sign)
            if g.whole:
                continue
            if self.used_num[row, d] == 0:
                self.mode[row, d] = FREE
            else:
                self.mode[row, d] = MIG if g.instance is not None else HAMI
