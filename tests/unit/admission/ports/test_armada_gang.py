"""Armada's gang scheduler table (internal/scheduler/scheduling/gang_scheduler_test.go TestGangScheduler),
each case named after its source key, run through admission over several cycles.

Mapping: a gang is one job whose pods all make its minAvailable; gangs are submitted in the table's
order to one queue (A, or the queue the case names); nodes are one cluster's (N32CpuNodes: 32 cpu,
256Gi; N8GpuNodes: 64 cpu, 1024Gi, 8 GPUs). Resources a node already uses are a running filler job
of another queue. A node uniformity label is Volcano's hard network topology: each value of the
label is a tier-1 HyperNode holding its nodes, the gang asks ``mode: hard, highestTierAllowed: 1``.
Armada's round limits, per-queue rate limits and per-priority limits are not Volcano's: not ported.
"""

from __future__ import annotations

import pytest

from tests.unit.admission.ports.harness import (
    Case,
    Outcome,
    Pending,
    Pod,
    Running,
    hypernode,
    nodes,
    queue,
    r,
)
from vglobal.model.resources import ResourceVector

N32 = r(32, "256Gi")
GPU8 = r(64, "1024Gi", 8)
HARD_TIER_1 = ("hard", 1)


def gangs(*sizes: tuple[int, ResourceVector], queue_: str = "A", topology: tuple[str, int] | None = None) -> list[Pending]:
    return [
        Pending(f"gang{i}", queue_, req, pods=n, created=float(i), topology=topology)
        for i, (n, req) in enumerate(sizes)
    ]


def run(node_set: dict[str, ResourceVector], todo: list[Pending], **kw: object) -> Outcome:
    return Case([queue("A"), queue("B"), queue("filler")], node_set, (), todo, **kw).run()  # type: ignore[arg-type]


def used(node: str, req: ResourceVector) -> Running:
    """What a node already uses, as a job of another queue."""
    return Running(f"used-{node}", "filler", (Pod(f"used-{node}-0", node, req),), min_available=1)


def test_simple_success() -> None:
    out = run(nodes("n", 1, N32), gangs((32, r(1, "4Gi"))))
    assert out.running == {"gang0"}


def test_simple_failure() -> None:
    out = run(nodes("n", 1, N32), gangs((33, r(1, "4Gi"))))
    assert out.running == set()


def test_one_success_and_one_failure() -> None:
    out = run(nodes("n", 1, N32), gangs((32, r(1, "4Gi")), (1, r(1, "4Gi"))))
    assert out.running == {"gang0"}


def test_multiple_nodes() -> None:
    out = run(nodes("n", 2, N32), gangs((64, r(1, "4Gi"))))
    assert out.running == {"gang0"}


def test_consider_all_nodes_in_the_bucket() -> None:
    """The first GPU node is all used but half a cpu; the second has 32 cpu used and every GPU free."""
    node_set = nodes("n", 2, GPU8)
    case = Case(
        [queue("A"), queue("filler")],
        node_set,
        [used("n1", r("63500m", "1024Gi", 8)), used("n2", r(32))],
        gangs((1, r(8, "128Gi", 1))),
    )
    out = case.run()
    assert "gang0" in out.running and out.taken == set()
    assert [p["node"] for p in case.pods["gang0"]] == ["n2"]


def test_resolution_has_no_impact_on_jobs_of_size_a_multiple_of_the_resolution() -> None:
    out = run(nodes("n", 3, N32), gangs(*[(1, r(16, "128Gi"))] * 6))
    assert out.running == {f"gang{i}" for i in range(6)}


def test_jobs_of_size_not_a_multiple_of_the_resolution_blocks_scheduling_new_jobs() -> None:
    """Armada indexes cpu in steps of 17 here, so a 16-cpu pod blocks a whole step and only three fit.
    Volcano has no such index: four 16-cpu pods fit on three 32-cpu nodes, all run."""
    out = run(nodes("n", 3, N32), gangs(*[(1, r(16, "128Gi"))] * 4))
    assert out.running == {f"gang{i}" for i in range(4)}


def test_hitting_globally_applicable_constraint_makes_job_scheduling_key_unfeasible() -> None:
    """A GPU job of A and one of B on a cluster with no GPU: neither can ever run."""
    todo = gangs((1, r(8, "128Gi", 1))) + [Pending("gangB", "B", r(8, "128Gi", 1), created=1.0)]
    case = Case([queue("A"), queue("B")], nodes("n", 1, N32), (), todo)
    out = case.run()
    assert out.running == set()
    reasons = {uid: d.reason for uid, d in out.results[-1].decisions.items()}
    assert all("nvidia.com/gpu" in why for why in reasons.values()), reasons


# ---- node uniformity: one HyperNode per label value


def _uniform(groups: dict[str, list[str]]) -> dict[str, list]:  # type: ignore[type-arg]
    return {"c1": [hypernode(f"foo-{v}", 1, members) for v, members in groups.items()]}


@pytest.mark.skip(reason="Armada's indexed node labels (a label must be indexed to be used) are not Volcano's")
def test_nodeuniformitylabel_set_but_not_indexed() -> None:
    """Not ported."""


def test_nodeuniformitylabel_not_set() -> None:
    """No node carries the label: no HyperNode, so a hard-topology gang has nowhere to go."""
    out = run(nodes("n", 1, N32), gangs((2, r(16, "128Gi")), topology=HARD_TIER_1), hypernodes={"c1": []})
    assert out.running == set()


def test_nodeuniformitylabel_insufficient_capacity() -> None:
    """Two label values of one 32-cpu node each; three 16-cpu pods fit in neither."""
    out = run(
        nodes("n", 2, N32),
        gangs((3, r(16, "128Gi")), topology=HARD_TIER_1),
        hypernodes=_uniform({"foov1": ["n1"], "foov2": ["n2"]}),
    )
    assert out.running == set()


def test_nodeuniformitylabel() -> None:
    """Three label values of two nodes each; in foov1 and foov3 every node uses a cpu already, so
    only foov2 holds four 16-cpu pods."""
    case = Case(
        [queue("A"), queue("filler")],
        nodes("n", 6, N32),
        [used(n, r(1)) for n in ("n1", "n2", "n5", "n6")],
        gangs((4, r(16, "128Gi")), topology=HARD_TIER_1),
        hypernodes=_uniform({"foov1": ["n1", "n2"], "foov2": ["n3", "n4"], "foov3": ["n5", "n6"]}),
    )
    out = case.run()
    assert "gang0" in out.running
    assert {p["node"] for p in case.pods["gang0"]} == {"n3", "n4"}


def test_nodeuniformitylabel_numscheduled_tiebreak() -> None:
    """Value a has two nodes, b three; three whole-node pods fit only in b."""
    case = Case(
        [queue("A")],
        nodes("n", 5, N32),
        (),
        gangs((3, r(32, "256Gi")), topology=HARD_TIER_1),
        hypernodes=_uniform({"a": ["n1", "n2"], "b": ["n3", "n4", "n5"]}),
    )
    out = case.run()
    assert "gang0" in out.running
    assert {p["node"] for p in case.pods["gang0"]} == {"n3", "n4", "n5"}
