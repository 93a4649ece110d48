"""Card-level vGPU fit at the hub: node totals that hold a gang are not enough when its cards do not."""

from __future__ import annotations

from tests.unit.admission.builders import admitted, job, reason
from vglobal.admission import ClusterSnap, NodeSnap, QueueSnap, Snapshot, admit
from vglobal.model.cards import CardFree
from vglobal.model.gpu_fit import HAMI
from vglobal.model.resources import ResourceVector

MEM = "volcano.sh/vgpu-memory"
NUM = "volcano.sh/vgpu-number"


def _node_total(cards: tuple[CardFree, ...]) -> ResourceVector:
    return ResourceVector(
        {
            "cpu": 32_000,
            NUM: sum(c.free_slots for c in cards) * 1000,
            MEM: sum(c.free_memory_mib for c in cards) * 1000,
        }
    )


def _cluster(name: str, *free_mib: int, total: ResourceVector | None = None) -> ClusterSnap:
    """One node with one card per figure: 24000 MiB each, that much free."""
    cards = tuple(CardFree(24000, f, 100, 10, 10, "A100", HAMI if f < 24000 else 0) for f in free_mib)
    total = total or _node_total(cards)
    return ClusterSnap(name, {}, (NodeSnap(f"{name}-n0", total, total),), devices={f"{name}-n0": cards})


def _vgpu(mib: int, number: int = 1) -> ResourceVector:
    return ResourceVector({"cpu": 1000, NUM: number * 1000, MEM: mib * 1000})


def _snap(*clusters: ClusterSnap, pending: tuple[object, ...]) -> Snapshot:
    return Snapshot(now=0.0, queues=(QueueSnap("q"),), clusters=clusters, pending=pending)  # type: ignore[arg-type]


def test_gang_goes_where_a_card_holds_its_memory() -> None:
    # equal totals (24000 MiB free each); only c2 has it on one card
    split, whole = _cluster("c1", 12000, 12000), _cluster("c2", 0, 24000)
    result = admit(_snap(split, whole, pending=(job("j", "q", _vgpu(20000)),)))
    assert admitted(result) == {"j": "c2"}


def test_gang_waits_naming_the_card_when_no_cluster_has_one() -> None:
    result = admit(_snap(_cluster("c1", 12000, 12000), pending=(job("j", "q", _vgpu(20000)),)))
    assert "no node in cluster c1 has a card with 20000 MiB free (most: 12000 MiB)" in reason(result, "j")


def test_cards_taken_in_the_cycle_are_gone_for_the_next_job() -> None:
    # totals far above the card (as a stale total could be): only the card table stops b
    c = _cluster("c1", 24000, total=_vgpu(100_000, number=10) + {"cpu": 31_000})
    result = admit(_snap(c, pending=(job("a", "q", _vgpu(20000)), job("b", "q", _vgpu(20000), created=1.0))))
    assert admitted(result) == {"a": "c1"}
    assert "has a card with 20000 MiB free (most: 4000 MiB)" in reason(result, "b")


def test_two_vgpus_of_one_pod_need_two_cards() -> None:
    result = admit(_snap(_cluster("c1", 24000, 8000), pending=(job("j", "q", _vgpu(6000, number=2)),)))
    assert admitted(result) == {"j": "c1"}
    result = admit(_snap(_cluster("c1", 24000, 4000), pending=(job("j", "q", _vgpu(6000, number=2)),)))
    assert "no node in cluster c1 has cards for 2 vGPUs of 6000 MiB per pod" in reason(result, "j")


def test_gpu_type_hint_is_applied() -> None:
    pending = (job("j", "q", _vgpu(1000), gpu_hints=({"nvidia.com/use-gputype": "H100"},)),)
    result = admit(_snap(_cluster("c1", 24000), pending=pending))
    assert "j" not in admitted(result)


def test_clusters_without_card_reports_keep_the_totals_check() -> None:
    total = _node_total((CardFree(24000, 12000, 100, 10, 10),) * 2)
    plain = ClusterSnap("c1", {}, (NodeSnap("n0", total, total),))
    result = admit(_snap(plain, pending=(job("j", "q", _vgpu(20000)),)))
    assert admitted(result) == {"j": "c1"}


def test_filter_node_three_cards_of_different_memory() -> None:
    """deviceshare_test.go Test_FilterNode "case0, should allocated 3 card with diff memory for pod":
    3 vGPUs at 100% cores each and no memory named take three whole cards of 30000, 20000 and
    30000 MiB; the hub fits them as the agent does, and a fourth card is needed for 4."""
    cards = tuple(CardFree(m, m, 100, 10, 10, "NVIDIA") for m in (30000, 20000, 30000))
    total = _node_total(cards) + {"volcano.sh/vgpu-cores": 300_000}
    c1 = ClusterSnap("c1", {}, (NodeSnap("n0", total, total),), devices={"n0": cards})
    three = ResourceVector({"cpu": 2000, NUM: 3000, "volcano.sh/vgpu-cores": 100_000})
    assert admitted(admit(_snap(c1, pending=(job("j", "q", three),)))) == {"j": "c1"}
    busy = (CardFree(30000, 29000, 90, 9, 10, "NVIDIA", HAMI), *cards[1:])
    c2 = ClusterSnap("c1", {}, (NodeSnap("n0", total, total),), devices={"n0": busy})
    result = admit(_snap(c2, pending=(job("j", "q", three),)))
    assert "no node in cluster c1 has cards for 3 vGPUs, 100% cores per pod" in reason(result, "j")
