"""Kubernetes quantities to canonical units, and back."""

from __future__ import annotations

import pytest

from vglobal.model.quantity import QuantityError, format_units, to_units


@pytest.mark.parametrize(
    ("resource", "text", "units"),
    [
        ("cpu", "500m", 500),
        ("cpu", "2", 2000),
        ("cpu", "1.5", 1500),
        ("cpu", "1e3", 1_000_000),
        ("cpu", "1E3", 1_000_000),
        ("cpu", "1.5e3", 1_500_000),
        ("cpu", ".5", 500),
        ("cpu", "+1", 1000),
        ("cpu", "0.1m", 1),  # below a millicore rounds up, as Kubernetes rounds requests
        ("cpu", 2, 2000),  # YAML integers
        ("cpu", 0.25, 250),  # YAML floats
        ("memory", "4Gi", 4 * 2**30),
        ("memory", "1G", 10**9),
        ("memory", "1k", 1000),
        ("memory", "1Ki", 1024),
        ("memory", "1.5Gi", 1_610_612_736),
        ("memory", "128974848", 128_974_848),
        ("memory", "129e6", 129_000_000),
        ("memory", "500m", 1),  # half a byte is one byte
        ("ephemeral-storage", "10Gi", 10 * 2**30),
        ("hugepages-2Mi", "4Mi", 4 * 2**20),
        ("pods", "110", 110),
        ("nvidia.com/gpu", "1", 1000),
        ("nvidia.com/gpu", 8, 8000),
        ("volcano.sh/vgpu-memory", "500m", 500),
    ],
)
def test_valid_quantities_become_canonical_units(resource: str, text: object, units: int) -> None:
    assert to_units(resource, text) == units


@pytest.mark.parametrize(
    "text",
    [
        "abc",
        "",
        "   ",
        "1.2.3",
        "1Gib",
        "1K",
        "1ki",
        "5 m",
        "m",
        "e3",
        "1e",
        "1..2",
        "inf",
        "NaN",
        None,
        True,
        [1],
    ],
)
def test_invalid_quantities_are_refused(text: object) -> None:
    with pytest.raises(QuantityError):
        to_units("cpu", text)


def test_negative_quantity_is_refused() -> None:
    with pytest.raises(QuantityError, match="negative"):
        to_units("memory", "-1Gi")


@pytest.mark.parametrize(
    ("resource", "units", "text"),
    [
        ("cpu", 1500, "1500m"),
        ("cpu", 2000, "2"),
        ("cpu", 0, "0"),
        ("memory", 4 * 2**30, "4Gi"),
        ("memory", 3 * 2**20, "3Mi"),
        ("memory", 10**9, "1000000000"),
        ("memory", 1, "1"),
        ("pods", 110, "110"),
        ("nvidia.com/gpu", 1000, "1"),
        ("nvidia.com/gpu", 500, "500m"),
    ],
)
def test_format_gives_the_shortest_exact_quantity(resource: str, units: int, text: str) -> None:
    assert format_units(resource, units) == text
    assert to_units(resource, text) == units


@pytest.mark.parametrize(
    ("resource", "text"),
    [("cpu", "250m"), ("cpu", "1e3"), ("memory", "1G"), ("memory", "1.5Gi"), ("memory", "7"), ("x/y", "3")],
)
def test_round_trip_keeps_the_amount(resource: str, text: str) -> None:
    units = to_units(resource, text)
    assert to_units(resource, format_units(resource, units)) == units
