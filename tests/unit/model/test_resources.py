"""ResourceVector arithmetic, in canonical units (a missing resource is 0)."""

from __future__ import annotations

from vglobal.model.resources import EMPTY, ResourceVector, total


def rv(**q: str) -> ResourceVector:
    return ResourceVector.from_quantities({k.replace("_", "/"): v for k, v in q.items()})


def test_from_quantities_and_back() -> None:
    v = ResourceVector.from_quantities({"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": "1"})
    assert dict(v) == {"cpu": 1500, "memory": 2 * 2**30, "nvidia.com/gpu": 1000}
    assert v.to_quantities() == {"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": "1"}


def test_add_and_subtract_per_dimension() -> None:
    a = ResourceVector({"cpu": 1000, "memory": 10})
    b = ResourceVector({"cpu": 500, "nvidia.com/gpu": 1000})
    assert a + b == {"cpu": 1500, "memory": 10, "nvidia.com/gpu": 1000}
    assert a - b == {"cpu": 500, "memory": 10, "nvidia.com/gpu": -1000}
    assert (a - b).pos() == {"cpu": 500, "memory": 10}


def test_zero_entries_vanish_so_equal_vectors_are_equal() -> None:
    a = ResourceVector({"cpu": 1000, "memory": 0})
    assert a == ResourceVector({"cpu": 1000})
    assert hash(a) == hash(ResourceVector({"cpu": 1000}))
    assert (a - a) == EMPTY and len(a - a) == 0


def test_fits_in_treats_missing_as_zero() -> None:
    need = ResourceVector({"cpu": 1000, "nvidia.com/gpu": 1000})
    assert need <= ResourceVector({"cpu": 2000, "nvidia.com/gpu": 1000, "memory": 5})
    assert not need <= ResourceVector({"cpu": 2000})
    assert EMPTY.fits_in({})


def test_minimum_maximum_scale_shortfall() -> None:
    a = ResourceVector({"cpu": 1000, "memory": 8})
    b = ResourceVector({"cpu": 3000})
    assert a.minimum(b) == {"cpu": 1000}
    assert a.maximum(b) == {"cpu": 3000, "memory": 8}
    assert a.scale(3) == {"cpu": 3000, "memory": 24}
    assert b.shortfall(a) == {"cpu": 2000}


def test_dominant_share() -> None:
    cluster = ResourceVector({"cpu": 10_000, "nvidia.com/gpu": 4000})
    assert ResourceVector({"cpu": 1000, "nvidia.com/gpu": 2000}).dominant_share(cluster) == 0.5
    # a resource the total does not have at all dominates completely
    assert ResourceVector({"memory": 1}).dominant_share(cluster) == 1.0


def test_total_sums_vectors() -> None:
    assert total([rv(cpu="1"), rv(cpu="500m", memory="1Gi")]) == {"cpu": 1500, "memory": 2**30}
