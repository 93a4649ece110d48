"""Reasons a person can read: which limit stopped a job, with Kubernetes quantities."""

from __future__ import annotations

from collections.abc import Sequence

from vglobal.admission.index import ResourceIndex
from vglobal.model.quantity import format_units


def fmt_row(index: ResourceIndex, row: Sequence[int | float]) -> str:
    """``{cpu: 4, nvidia.com/gpu: 8}`` from a dense row (zero dimensions left out)."""
    parts = [
        f"{name}: {format_units(name, int(value))}"
        for name, value in zip(index.names, row, strict=True)
        if value
    ]
    return "{" + ", ".join(parts) + "}"


def fmt_amount(index: ResourceIndex, dim: int, value: int | float) -> str:
    return format_units(index.names[dim], int(value))


def fmt_gang(index: ResourceIndex, shapes: Sequence[tuple[Sequence[int], int]]) -> str:
    """``8 pods x {nvidia.com/gpu: 8}`` (shapes joined with ``+``)."""
    if not shapes:
        return "no pods"
    return " + ".join(f"{n} pod{'s' if n != 1 else ''} x {fmt_row(index, row)}" for row, n in shapes)


def capability_reason(
    queue: str, index: ResourceIndex, dim: int, cap: float, alloc: int, need: int, explicit: bool
) -> str:
    name = index.names[dim]
    amount = fmt_amount(index, dim, cap)
    # A limit the admin did not set comes from capacity less the guarantees of sibling queues.
    limit = (
        f"capability {name} {amount}"
        if explicit
        else (f"limit {name} {amount} (schedulable capacity less other queues' guarantees)")
    )
    return (
        f"queue {queue}: {limit}, allocated {fmt_amount(index, dim, alloc)}, "
        f"job needs {fmt_amount(index, dim, need)}"
    )


def guarantee_reason(index: ResourceIndex, dim: int, free: int, held: int, need: int) -> str:
    name = index.names[dim]
    return (
        f"guarantees of other queues hold back {name} {fmt_amount(index, dim, held)} of "
        f"{fmt_amount(index, dim, free)} free, job needs {fmt_amount(index, dim, need)}"
    )


def capacity_reason(index: ResourceIndex, dim: int, capacity: float, need: int) -> str:
    return (
        f"job needs {index.names[dim]} {fmt_amount(index, dim, need)} but all schedulable clusters "
        f"together have {fmt_amount(index, dim, capacity)}"
    )
