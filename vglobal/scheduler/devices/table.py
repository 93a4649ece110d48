"""Per-GPU usage over all nodes of a session: arrays of shape (nodes, most GPUs on a node).

Fit and score are vectorised over candidate nodes for hami-core vGPUs and whole GPUs; MIG GPUs keep
a small per-device state (their geometry) and are checked one by one. Volcano's device rules:
a device fits a vGPU when ``UsedNum < split``, free memory >= the request, ``UsedCore + cores <= 100``,
not (cores == 100 and the device is shared), not (the device's cores are all used and cores == 0).
A whole ``nvidia.com/gpu`` takes a device nobody uses.
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
    cards_fit,
    free_milli,
    memory_needed,
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
        for row, devs in enumerate(inventory):
            for d in devs:
                self.present[row, d.index] = True
                self.memory[row, d.index] = d.memory_mib
                self.split[row, d.index] = d.split
                self.mig_capable[row, d.index] = d.mig
            self.models.append([d.model for d in devs] + [""] * (g - len(devs)))
        self.used_num: IntArray = np.zeros((n, g), dtype=np.int64)
        self.used_mem: IntArray = np.zeros((n, g), dtype=np.int64)
        self.used_cores: IntArray = np.zeros((n, g), dtype=np.int64)
        self.mode: IntArray = np.zeros((n, g), dtype=np.int64)
        self.mig_state: dict[tuple[int, int], MigState] = {}
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

    def device_ok(self, req: DeviceRequest, rows: IntArray) -> BoolArray:
        """(len(rows), width): which devices could take one unit of the request."""
        cards = self._cards(rows)
        model_ok = self.model_mask(req.use_types, req.nouse_types)[rows]
        if req.mode == "mig" and not req.whole:
            ok = mig_cards_ok(req, cards, self.mig_capable[rows], model_ok)
            return ok & self._mig_ok(req, rows)
        return cards_fit(req, cards, model_ok)

    def _mig_ok(self, req: DeviceRequest, rows: IntArray) -> BoolArray:
        out = np.zeros((rows.size, self.width), dtype=np.bool_)
        for i, row in enumerate(rows.tolist()):
            for dev in np.flatnonzero(self.mig_capable[row]).tolist():
                out[i, dev] = self._mig_pick(req, row, dev) is not None
        return out

    def _mig_pick(self, req: DeviceRequest, row: int, dev: int) -> tuple[int, MigInstance] | None:
        gpu = self.devices[row][dev]
        groups = self.mig_config.geometries(gpu.model, gpu.memory_mib)
        state = self.mig_state.get((row, dev), MigState())
        return mig_pick(req, state, groups, gpu.memory_mib, self.mig_config.memory_factor)

    def node_ok(self, req: DeviceRequest, rows: IntArray) -> BoolArray:
        if req.empty:
            return np.ones(rows.size, dtype=np.bool_)
        need = req.whole or req.number
        managed = self.managed[rows]
        if req.whole and not req.number:
            # nodes without a device list keep plain nvidia.com/gpu counting (the resource column)
            ok: BoolArray = ~managed
            if managed.any():
                sub = rows[managed]
                ok[managed] = self.device_ok(req, sub).sum(axis=1) >= need
            return ok
        ok = self.device_ok(req, rows).sum(axis=1) >= need
        ok &= managed
        return ok

    def order_key(self, req: DeviceRequest, rows: IntArray, policy: str) -> FloatArray:
        """Smaller first (the shared rule, gpu_fit.card_order)."""
        return card_order(self._cards(rows), policy)

    def free_milli(self, rows: IntArray) -> IntArray:
        """Per device, the free share of the GPU in milli (the smaller of compute and memory)."""
        return free_milli(self._cards(rows))

    def chosen(self, req: DeviceRequest, rows: IntArray, policy: str) -> IntArray:
        """(len(rows), units) device indices each node would give, best first; -1 where it cannot."""
        units = req.whole or req.number
        ok = self.device_ok(req, rows)
        key = np.where(ok, self.order_key(req, rows, policy), np.inf)
        order = np.argsort(key, axis=1, kind="stable")[:, :units]
        got = np.take_along_axis(ok, order, axis=1)
        out: IntArray = np.where(got, order, -1)
        return out

    def grants(self, req: DeviceRequest, row: int, policy: str) -> list[Grant] | None:
        if req.empty:
            return []
        rows = np.array([row], dtype=np.int64)
        if req.whole and not req.number and not self.managed[row]:
            return []
        picked = self.chosen(req, rows, policy)[0]
        if (picked < 0).any():
            return None
        out = []
        for dev in picked.tolist():
            if req.whole:
                out.append(Grant(dev, int(self.memory[row, dev]), 100, whole=True))
            elif req.mode == "mig":
                choice = self._mig_pick(req, row, dev)
                assert choice is not None
                geometry, inst = choice
                mem = instance_memory(inst, self.mig_config.memory_factor)
                out.append(Grant(dev, mem, req.cores, geometry=geometry, instance=inst))
            else:
                mem = int(self.memory_needed(req, rows)[0, dev])
                out.append(Grant(dev, mem, req.cores))
        return out

    def apply(self, row: int, grants: Sequence[Grant], sign: int) -> None:
        for g in grants:
            d = g.device
            self.used_num[row, d] += sign
            self.used_mem[row, d] += sign * g.memory_mib
            self.used_cores[row, d] += sign * g.cores
            if g.instance is not None:
                mig_use(self.mig_state.setdefault((row, d), MigState()), g.geometry, g.instance.name, sign)
            if g.whole:
                continue
            if self.used_num[row, d] == 0:
                self.mode[row, d] = FREE
            else:
                self.mode[row, d] = MIG if g.instance is not None else HAMI
