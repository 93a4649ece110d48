"""Small formatting for the pages: times, quantities, and the phase of a thing as a class (ages and
the rows themselves: ``vglobal.sdk.rows``)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from vglobal.sdk.rows import amount

__all__ = ["PHASES", "amount", "phase_class", "qty", "resources", "when"]

PHASES = [
    "Pending",
    "Inqueue",
    "Running",
    "Completing",
    "Completed",
    "Failed",
    "Aborting",
    "Aborted",
    "Terminating",
    "Terminated",
    "Restarting",
]
# GPUs first: the scarce resource a platform team looks at before anything else.
RESOURCE_ORDER = ["nvidia.com/gpu", "cpu", "memory", "pods"]


def when(value: datetime | str | None) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%d %H:%M:%S")


def qty(value: float | int | str | Decimal, resource: str = "") -> str:
    if isinstance(value, str):
        value = amount(value)
    number = float(value)
    if resource == "memory" or resource.startswith("hugepages-") or resource.endswith("storage"):
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if number >= size:
                return f"{number / size:.3g}{suffix}"
        return f"{number:.0f}"
    if number == int(number):
        return str(int(number))
    return f"{number:.3g}"


def resources(*lists: dict[str, str]) -> list[str]:
    """The resource names in any of ``lists``, GPUs first, then cpu, memory, the rest by name."""
    names = {n for lst in lists for n in lst}
    known = [r for r in RESOURCE_ORDER if r in names]
    gpus = sorted(n for n in names - set(known) if "gpu" in n or "mig" in n)
    return known + gpus + sorted(names - set(known) - set(gpus))


def phase_class(phase: str) -> str:
    return "phase-" + (phase or "unknown").lower()
