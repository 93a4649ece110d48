"""What a node's vGPU resources show as free comes from its cards: a card a whole-GPU pod holds or
one cut into MIG instances leaves no vGPU room, though the node's request sums would say it does."""

from __future__ import annotations

from vglobal.convert.cards import node_free, vgpu_free
from vglobal.model.cards import CardFree
from vglobal.model.gpu_fit import HAMI, MIG

FULL = CardFree(81920, 81920, 100, 10, 10)  # untouched: 10 vGPU slots
WHOLE = CardFree(81920, 0, 0, 9, 10)  # a whole-GPU pod's card: its memory and compute taken
SHARED = CardFree(81920, 61920, 70, 8, 10, mode=HAMI)  # two vGPU pods on it
CUT = CardFree(81920, 40960, 100, 9, 10, mode=MIG)  # MIG instances: no vGPU pod may join


def test_only_cards_a_vgpu_pod_may_still_use_count() -> None:
    # 7 of 8 cards held whole: one card's room, not 80 slots.
    assert vgpu_free([WHOLE] * 7 + [FULL]) == {
        "volcano.sh/vgpu-number": 10_000, "volcano.sh/vgpu-memory": 81920_000, "volcano.sh/vgpu-cores": 100_000}  # fmt: skip
    assert vgpu_free([SHARED, CUT]) == {
        "volcano.sh/vgpu-number": 8_000, "volcano.sh/vgpu-memory": 61920_000, "volcano.sh/vgpu-cores": 70_000}  # fmt: skip


def test_a_node_without_cards_or_vgpu_capacity_shows_what_its_agent_said() -> None:
    said = {"nvidia.com/gpu": 1000, "volcano.sh/vgpu-number": 80_000}
    assert node_free(said, {"volcano.sh/vgpu-number": "80"}, None) == said
    cards = [c.to_json() for c in [WHOLE] * 7 + [FULL]]
    assert node_free(said, {"volcano.sh/vgpu-number": "80"}, cards) == {
        "nvidia.com/gpu": 1000, "volcano.sh/vgpu-number": 10_000}  # fmt: skip
