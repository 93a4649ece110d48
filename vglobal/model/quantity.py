"""Kubernetes quantities to and from vglobal's canonical integer units.

cpu is stored in millicores, memory-like resources in bytes, ``pods`` as a count and every other
resource (GPUs, vGPU numbers, ...) in milli-units, so 1 GPU = 1000.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any

# The API server's grammar: signed number, then a binary or decimal SI suffix or a decimal exponent.
_GRAMMAR = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?")

# One quantity in canonical units at most (a pebibyte, or 2^50 millicores): sums over the pods
# of a job and the nodes of a cluster then stay far inside the 64-bit integers admission uses.
MAX_UNITS = 2**50

BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})
COUNT_RESOURCES = frozenset({"pods"})


class QuantityError(ValueError):
    """A value that is not a valid Kubernetes quantity."""


def parse_decimal(value: Any) -> Decimal:
    """Parse a quantity (``500m``, ``4Gi``, ``1e3``, ``2``) exactly, as the API server does."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}")
        return Decimal(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"invalid quantity {value!r}")
    return _parse_text(value)


# Manifests repeat a handful of quantities ("1", "4Gi", "500m") across their pods and jobs: each
# text is parsed once (a Decimal is immutable, so sharing it is safe). Failures are not cached.
@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> Decimal:
    if not _GRAMMAR.fullmatch(value.strip()):
        raise QuantityError(f"invalid quantity {value!r}")
    # The client is heavy (~0.4 s to import): only load it when a quantity is parsed.
    from kubernetes.utils.quantity import parse_quantity

    try:
        parsed = parse_quantity(value.strip())  # type: ignore[no-untyped-call]
    except (ValueError, InvalidOperation, TypeError):
        raise QuantityError(f"invalid quantity {value!r}") from None
    if not isinstance(parsed, Decimal) or not parsed.is_finite():
        raise QuantityError(f"invalid quantity {value!r}")
    return parsed


def unit_scale(resource: str) -> int:
    """How many canonical units one whole unit of ``resource`` is."""
    if resource in BYTE_RESOURCES or resource.startswith("hugepages-") or resource in COUNT_RESOURCES:
        return 1
    return 1000


def to_units(resource: str, value: Any) -> int:
    """A quantity in canonical integer units, rounded up like Kubernetes rounds requests."""
    if isinstance(value, str):
        return _text_units(resource, value)
    return _units(resource, value)


@functools.lru_cache(maxsize=4096)
def _text_units(resource: str, value: str) -> int:
    return _units(resource, value)


def _units(resource: str, value: Any) -> int:
    amount = parse_decimal(value)
    if amount < 0:
        raise QuantityError(f"negative quantity {value!r}")
    units = int((amount * unit_scale(resource)).to_integral_value(rounding=ROUND_CEILING))
    if units > MAX_UNITS:
        raise QuantityError(f"quantity {value!r} is too large (at most {format_units(resource, MAX_UNITS)})")
    return units


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_units(resource: str, units: int) -> str:
    """Canonical units back to the shortest exact Kubernetes quantity string."""
    scale = unit_scale(resource)
    if scale == 1000:
        if units % 1000 == 0:
            return str(units // 1000)
        return f"{units}m"
    if resource in COUNT_RESOURCES or units == 0:
        return str(units)
    for suffix, size in _BINARY:
        if units % size == 0:
            return f"{units // size}{suffix}"
    return str(units)
