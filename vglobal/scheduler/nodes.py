"""Per-session node table: one row per node (sorted by name), one column per resource.

Predicates and scores read these arrays for all nodes at once; allocate / pipeline / evict update
one row in place, so the session never copies the cluster per task. Amounts follow Volcano's
``NodeInfo``: ``used`` holds allocated and releasing tasks, ``pipelined`` waits for releasing
resources, ``idle = allocatable - used`` and ``future_idle = idle + releasing - pipelined``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from vglobal.scheduler.api import NodeSpec, Taint

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

# k8s scoring counts a pod without requests as 100m cpu / 200Mi memory (the "non-zero" request).
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
# A node that does not state its pod capacity gets the kubelet's default maxPods.
DEFAULT_MAX_PODS = 110


class ResourceIndex:
    """Resource name <-> column; ``pods`` and cpu/memory always present."""

    __slots__ = ("col", "names")

    def __init__(self, names: Iterable[str]) -> None:
        ordered = ["cpu", "memory", "pods"]
        ordered += sorted(set(names) - set(ordered))
        self.names: tuple[str, ...] = tuple(ordered)
        self.col: dict[str, int] = {n: i for i, n in enumerate(ordered)}

    def __len__(self) -> int:
        return len(self.names)

    def vector(self, amounts: Mapping[str, int]) -> IntArray:
        out = np.zeros(len(self.names), dtype=np.int64)
        for name, value in amounts.items():
            out[self.col[name]] = value
        return out


class NodeTable:
    __slots__ = (
        "alloc",
        "future_idle",
        "idle",
        "index",
        "labels",
        "names",
        "nonzero_used",
        "pipelined",
        "releasing",
        "row",
        "specs",
        "taints",
        "unschedulable",
        "used",
        "used_ports",
    )

    def __init__(self, nodes: Sequence[NodeSpec], index: ResourceIndex) -> None:
        specs = sorted(nodes, key=lambda n: n.name)
        self.specs: tuple[NodeSpec, ...] = tuple(specs)
        self.index = index
        self.names: tuple[str, ...] = tuple(n.name for n in specs)
        self.row: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        n, r = len(specs), len(index)
        self.alloc: IntArray = np.zeros((n, r), dtype=np.int64)
        pods = index.col["pods"]
        for i, spec in enumerate(specs):
            for name, value in spec.allocatable.items():
                self.alloc[i, index.col[name]] = value
            if "pods" not in spec.allocatable:
                self.alloc[i, pods] = DEFAULT_MAX_PODS
        self.used: IntArray = np.zeros((n, r), dtype=np.int64)
        self.releasing: IntArray = np.zeros((n, r), dtype=np.int64)
        self.pipelined: IntArray = np.zeros((n, r), dtype=np.int64)
        self.idle: IntArray = self.alloc.copy()
        self.future_idle: IntArray = self.alloc.copy()
        # cpu and memory as k8s scoring counts them (non-zero defaults for request-less pods)
        self.nonzero_used: IntArray = np.zeros((n, 2), dtype=np.int64)
        self.labels: tuple[Mapping[str, str], ...] = tuple(s.labels for s in specs)
        self.taints: tuple[tuple[Taint, ...], ...] = tuple(s.taints for s in specs)
        self.unschedulable: BoolArray = np.array([s.unschedulable for s in specs], dtype=np.bool_)
        self.used_ports: list[dict[int, int]] = [{} for _ in specs]

    def __len__(self) -> int:
        return len(self.names)

    # Row updates, mirroring NodeInfo.addResource / removeResource.
    def add_used(self, row: int, req: IntArray, releasing: bool) -> None:
        self.used[row] += req
        self.idle[row] -= req
        if releasing:
            self.releasing[row] += req
        else:
            self.future_idle[row] -= req

    def remove_used(self, row: int, req: IntArray, releasing: bool) -> None:
        self.used[row] -= req
        self.idle[row] += req
        if releasing:
            self.releasing[row] -= req
        else:
            self.future_idle[row] += req

    def to_releasing(self, row: int, req: IntArray) -> None:
        """An allocated task on the node starts releasing: idle is unchanged, future idle grows."""
        self.releasing[row] += req
        self.future_idle[row] += req

    def from_releasing(self, row: int, req: IntArray) -> None:
        self.releasing[row] -= req
        self.future_idle[row] -= req

    def add_pipelined(self, row: int, req: IntArray) -> None:
        self.pipelined[row] += req
        self.future_idle[row] -= req

    def remove_pipelined(self, row: int, req: IntArray) -> None:
        self.pipelined[row] -= req
        self.future_idle[row] += req

    def add_pod(self, row: int, nonzero: tuple[int, int], ports: Iterable[int], sign: int) -> None:
        self.nonzero_used[row, 0] += sign * nonzero[0]
        self.nonzero_used[row, 1] += sign * nonzero[1]
        used = self.used_ports[row]
        for port in ports:
            count = used.get(port, 0) + sign
            if count > 0:
                used[port] = count
            else:
                used.pop(port, None)

    def total(self) -> IntArray:
        out: IntArray = self.alloc.sum(axis=0)
        return out
