"""Fragmentation-aware GPU placement, driven by the demand seen so far (our ``fgd`` policy).

After "Beware of Fragmentation" (USENIX ATC'23): the fragmentation of a node for one task type is
the free GPU capacity that type cannot use there: all of it when the type does not fit the node at
all (cpu, memory, GPU count or model), else the GPUs whose free share is below what the type needs
per GPU (for whole-GPU types: every partly used GPU). A node's fragmentation is the mean over task
types weighted by how often each type has arrived. A task goes where it *increases* fragmentation
least. Unlike the paper, which assumes the whole trace's mix is known up front, the weights here
are only the tasks this scheduler has seen: no oracle, and the mix adapts as the workload shifts.
``cpu_stranded`` adds a soft count of GPUs stranded by scarce cpu (see there).

Per node the work is vectorised: one pass per distinct per-GPU demand, then one boolean matrix of
(task types x candidate nodes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vglobal.model.gpu_fit import DeviceRequest
from vglobal.scheduler.nodes import BoolArray, FloatArray, IntArray

FULL = 1000  # one GPU in milli


@dataclass(frozen=True, slots=True)
class TaskType:
    cpu: int
    memory: int
    units: int  # GPUs (whole) or vGPUs
    demand: int  # per-GPU need in milli: 1000 for whole GPUs, 0 for cpu-only
    use_types: frozenset[str] = frozenset()
    nouse_types: frozenset[str] = frozenset()


def task_type(cpu: int, memory: int, req: DeviceRequest) -> TaskType:
    if req.whole:
        return TaskType(cpu, memory, req.whole, FULL, req.use_types, req.nouse_types)
    if req.number:
        demand = min(FULL, req.cores * 10) if req.cores else FULL
        return TaskType(cpu, memory, req.number, demand, req.use_types, req.nouse_types)
    return TaskType(cpu, memory, 0, 0)


class DemandModel:
    """Counts of task types in arrival order, with per-type arrays rebuilt when a new type shows up."""

    def __init__(self) -> None:
        self.counts: dict[TaskType, int] = {}
        self.seen: set[str] = set()
        self._kinds: tuple[TaskType, ...] | None = None
        self.weights: FloatArray = np.zeros(0)
        self.cpu: IntArray = np.zeros(0, dtype=np.int64)
        self.memory: IntArray = np.zeros(0, dtype=np.int64)
        self.units: IntArray = np.zeros(0, dtype=np.int64)
        self.demand: IntArray = np.zeros(0, dtype=np.int64)
        self.group: IntArray = np.zeros(0, dtype=np.int64)  # index into groups
        self.groups: list[tuple[int, frozenset[str], frozenset[str]]] = []  # (demand, use, nouse)

    def observe(self, uid: str, kind: TaskType) -> None:
        if uid in self.seen:
            return
        self.seen.add(uid)
        if kind not in self.counts:
            self._kinds = None
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self._kinds is not None:
            self.weights[self._kinds.index(kind)] += 1.0

    def kinds(self) -> tuple[TaskType, ...]:
        if self._kinds is None:
            kinds = tuple(
                sorted(self.counts, key=lambda t: (t.demand, t.units, t.cpu, t.memory, sorted(t.use_types)))
            )
            self._kinds = kinds
            self.weights = np.array([self.counts[t] for t in kinds], dtype=np.float64)
            self.cpu = np.array([t.cpu for t in kinds], dtype=np.int64)
            self.memory = np.array([t.memory for t in kinds], dtype=np.int64)
            self.units = np.array([t.units for t in kinds], dtype=np.int64)
            self.demand = np.array([t.demand for t in kinds], dtype=np.int64)
            self.groups = sorted(
                {(t.demand, t.use_types, t.nouse_types) for t in kinds},
                key=lambda g: (g[0], sorted(g[1]), sorted(g[2])),
            )
            at = {g: i for i, g in enumerate(self.groups)}
            self.group = np.array([at[(t.demand, t.use_types, t.nouse_types)] for t in kinds], dtype=np.int64)
        return self._kinds


ModelMask = dict[tuple[frozenset[str], frozenset[str]], BoolArray]


def fragmentation(
    model: DemandModel,
    free: IntArray,
    cpu_free: IntArray,
    mem_free: IntArray,
    model_ok: ModelMask | None = None,
) -> FloatArray:
    """Expected fragmentation (GPU milli) of each node given its devices' free milli ``free`` (C, G).

    ``model_ok[(use, nouse)]`` (C, G) marks the devices a model-constrained type may use.
    """
    kinds = model.kinds()
    nodes = free.shape[0]
    total_w = float(model.weights.sum())
    if not kinds or total_w == 0:
        return np.zeros(nodes, dtype=np.float64)
    total = free.sum(axis=1).astype(np.float64)
    stranded = np.zeros((len(model.groups), nodes), dtype=np.float64)
    usable_count = np.zeros((len(model.groups), nodes), dtype=np.int64)
    for i, (demand, use, nouse) in enumerate(model.groups):
        if demand == 0:
            usable_count[i] = np.iinfo(np.int64).max  # cpu-only: no GPU needed, none stranded
            continue
        usable = free >= demand
        if model_ok is not None and (use or nouse):
            usable &= model_ok[(use, nouse)]
        # free capacity on GPUs this type cannot use is fragment even when the type fits the node
        stranded[i] = np.where(usable, 0, free).sum(axis=1)
        usable_count[i] = usable.sum(axis=1)
    g = model.group
    fits = (
        (cpu_free[None, :] >= model.cpu[:, None])
        & (mem_free[None, :] >= model.memory[:, None])
        & (usable_count[g] >= model.units[:, None])
    )
    frag = np.where(fits, stranded[g], total[None, :])
    out: FloatArray = model.weights @ frag / total_w
    return out


def cpu_stranded(model: DemandModel, gpu_free: IntArray, cpu_free: IntArray) -> FloatArray:
    """Per node, the free GPU milli its free cpu cannot feed at the GPU demand's mean cpu per GPU-milli.

    FGD counts a node's free GPU as fragment for a task type only once the type's cpu no longer fits;
    this soft count sees the squeeze coming: a node keeping 4 GPUs but cpu for 1 strands 3.
    """
    model.kinds()
    gpu_w = model.weights * (model.units > 0) * (model.demand > 0)
    gpu_need = float((gpu_w * model.units * model.demand).sum())
    cpu_need = float((gpu_w * model.cpu).sum())
    if gpu_need <= 0 or cpu_need <= 0:
        return np.zeros(gpu_free.shape[0], dtype=np.float64)
    fed = cpu_free.astype(np.float64) * (gpu_need / cpu_need)
    out: FloatArray = np.maximum(0.0, gpu_free - fed)
    return out
