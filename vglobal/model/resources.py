"""ResourceVector: an immutable map of resource name to canonical integer units."""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from vglobal.model.quantity import format_units, to_units


class ResourceVector(Mapping[str, int]):
    """Non-negative-or-signed amounts per resource; a missing resource is 0.

    Zero entries are dropped so two equal vectors compare and hash equal.
    """

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        # Concrete types first: isinstance against the Mapping ABC costs microseconds, and hot
        # paths build hundreds of thousands of vectors per cycle.
        if type(items) is dict:
            source: Iterable[tuple[str, int]] = items.items()
        elif type(items) is ResourceVector:
            source = items._items.items()
        elif isinstance(items, Mapping):
            source = items.items()
        else:
            source = items
        self._items: dict[str, int] = {k: int(v) for k, v in source if v}
        self._hash: int | None = None

    @classmethod
    def from_quantities(cls, quantities: Mapping[str, Any] | None) -> ResourceVector:
        """Parse ``{"cpu": "500m", "memory": "1Gi"}``; raises QuantityError on a bad value."""
        return cls({name: to_units(name, value) for name, value in (quantities or {}).items()})

    def to_quantities(self) -> dict[str, str]:
        return {name: format_units(name, units) for name, units in sorted(self._items.items())}

    # Mapping protocol
    def __getitem__(self, key: str) -> int:
        return self._items.get(key, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # The dict's own views (read-only, C speed); the Mapping defaults go through __getitem__.
    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def items(self) -> ItemsView[str, int]:
        return self._items.items()

    def values(self) -> ValuesView[int]:
        return self._items.values()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ResourceVector):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == {k: v for k, v in other.items() if v}
        return NotImplemented

    def __repr__(self) -> str:
        return f"ResourceVector({self.to_quantities()})"

    # Arithmetic
    def __add__(self, other: Mapping[str, int]) -> ResourceVector:
        out = dict(self._items)
        # A ResourceVector's own dict iterates at C speed; the Mapping protocol does not.
        for k, v in (other._items if type(other) is ResourceVector else other).items():
            out[k] = out.get(k, 0) + v
        return ResourceVector(out)

    def __sub__(self, other: Mapping[str, int]) -> ResourceVector:
        out = dict(self._items)
        for k, v in (other._items if type(other) is ResourceVector else other).items():
            out[k] = out.get(k, 0) - v
        return ResourceVector(out)

    def scale(self, factor: int) -> ResourceVector:
        return ResourceVector({k: v * factor for k, v in self._items.items()})

    def pos(self) -> ResourceVector:
        """Per-dimension max(0, x)."""
        return ResourceVector({k: v for k, v in self._items.items() if v > 0})

    def fits_in(self, other: Mapping[str, int]) -> bool:
        """self <= other on every dimension (a missing dimension is 0)."""
        return all(v <= other.get(k, 0) for k, v in self._items.items())

    def __le__(self, other: Mapping[str, int]) -> bool:
        return self.fits_in(other)

    def minimum(self, other: Mapping[str, int]) -> ResourceVector:
        keys = set(self._items) | set(other)
        return ResourceVector({k: min(self[k], other.get(k, 0)) for k in keys})

    def maximum(self, other: Mapping[str, int]) -> ResourceVector:
        keys = set(self._items) | set(other)
        return ResourceVector({k: max(self[k], other.get(k, 0)) for k in keys})

    def shortfall(self, available: Mapping[str, int]) -> ResourceVector:
        """What ``available`` lacks to hold self: pos(self - available)."""
        return (self - available).pos()

    def dominant_share(self, total: Mapping[str, int]) -> float:
        """max_r self_r / total_r; a positive amount of a resource with no total counts as 1."""
        share = 0.0
        for k, v in self._items.items():
            t = total.get(k, 0)
            s = (v / t) if t > 0 else (1.0 if v > 0 else 0.0)
            share = max(share, s)
        return share

    def as_dict(self) -> dict[str, int]:
        return dict(self._items)


EMPTY = ResourceVector()


def queue_share(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> float:
    """allocated / deserved of the dominant resource, over the resources deserved names (Volcano's
    proportion plugin's share); 0 when it deserves nothing."""
    return max((allocated.get(r, 0) / d for r, d in deserved.items() if d > 0), default=0.0)


def total(vectors: Iterable[Mapping[str, int]]) -> ResourceVector:
    out: dict[str, int] = {}
    for vec in vectors:
        for k, v in vec.items():
            out[k] = out.get(k, 0) + v
    return ResourceVector(out)


# Extended resources that are accelerators (GPUs, NPUs, TPUs, their shares and DRA device classes):
# a cluster with any of them is kept for the work that asks for them (admission's placement).
ACCELERATOR_PREFIXES = (
    "nvidia.com/",
    "amd.com/gpu",
    "gpu.intel.com/",
    "habana.ai/",
    "huawei.com/ascend",
    "volcano.sh/vgpu",
    "aws.amazon.com/neuron",
    "google.com/tpu",
    "deviceclass/",
)


def is_accelerator(resource: str) -> bool:
    return resource.lower().startswith(ACCELERATOR_PREFIXES)

