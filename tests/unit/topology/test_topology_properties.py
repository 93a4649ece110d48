"""Property: whatever the load, a hard gang is placed whole inside one HyperNode of allowed tier or
not at all; a soft gang is placed whenever the plain scheduler would place it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.topology.topo_cases import gang, nodes, run, switch_of, switches

HN = switches(per_switch=3, count=4, spines=2)
NODES = nodes(12, cpu="4")


@settings(max_examples=40, deadline=None)
@given(
    busy=st.lists(st.tuples(st.integers(0, 11), st.sampled_from(["1", "2", "3"])), max_size=8),
    sizes=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    tier=st.sampled_from([1, 2]),
)
def test_hard_gangs_stay_inside_one_allowed_hypernode(
    busy: list[tuple[int, str]], sizes: list[int], tier: int
) -> None:
    jobs = [gang(f"b{i}", 1, cpu=cpu, placed={0: f"n{row}"}, creation=i) for i, (row, cpu) in enumerate(busy)]
    jobs += [gang(f"g{k}", size, topology=("hard", tier), creation=100 + k) for k, size in enumerate(sizes)]
    out = run(NODES, jobs, HN)
    for k, size in enumerate(sizes):
        placed = [out.binds[f"g{k}-{i}"] for i in range(size) if f"g{k}-{i}" in out.binds]
        assert len(placed) in (0, size)  # all or nothing
        if placed:
            assert len({switch_of(HN, n, tier) for n in placed}) == 1


@settings(max_examples=25, deadline=None)
@given(size=st.integers(1, 12), busy=st.lists(st.integers(0, 11), max_size=6, unique=True))
def test_soft_places_whatever_plain_places(size: int, busy: list[int]) -> None:
    base = [gang(f"b{i}", 1, cpu="2", placed={0: f"n{row}"}, creation=i) for i, row in enumerate(busy)]
    soft = run(NODES, [*base, gang("g", size, topology=("soft", 1), creation=99)], HN)
    plain = run(NODES, [*base, gang("g", size, creation=99)], HN)
    placed = sum(1 for uid in soft.binds if uid.startswith("g-"))
    assert placed == sum(1 for uid in plain.binds if uid.startswith("g-"))
