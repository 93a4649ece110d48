"""The shared MIG rule (vglobal.model.mig_fit) and the hub's copy of a node's cards (model.cards):
the hub must decide a card's fit as the agent's deviceshare plugin does.

Cases port Volcano's pkg/scheduler/api/devices/nvidia/vgpu/mig_test.go: TestFindMatch,
TestAddAndSubMigUsed and TestMIGFactory_{TryAddPod,AddPod,SubPod}_WithMemoryFactor. Then the agent's
report of its cards (vglobal.agent.cards) is fed to the hub's NodeCards and both must give the
same answer, card by card, as the agent's DeviceTable over a run of placements.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.unit.devices.test_deviceshare import A100, gpu_node, task
from vglobal import convert
from vglobal.agent.cards import node_cards
from vglobal.model.cards import CardFree, MigCard, NodeCards
from vglobal.model.gpu_fit import HAMI as HAMI_USED
from vglobal.model.gpu_fit import DeviceRequest
from vglobal.model.mig_fit import MigInstance, MigState, mig_choice, mig_use
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import Grant, NodeSpec
from vglobal.scheduler.devices import GPUS_EXTENSION, device_request, gpus_from_spec, vgpu_capacity
from vglobal.scheduler.devices.mig import parse_mig_config
from vglobal.scheduler.devices.table import DeviceTable


def _group(*instances: tuple[str, int, int]) -> tuple[MigInstance, ...]:
    return tuple(MigInstance(n, m, c) for n, m, c in instances)


# TestFindMatch: (case, request MiB, geometry in force (Volcano's usage.Index; -1 = None), used
# instances (len(UsedIndex) per name), allowed geometries, expected (geometry, instance, memory))
FIND_MATCH = [
    ("Match 1g.10gb and available", 10, 0, {}, [_group(("1g.10gb", 10240, 2))], (0, "1g.10gb", 10240)),
    ("No match due to memory too high", 20000, 0, {}, [_group(("1g.10gb", 10, 1))], None),
    ("Empty geometry list", 10, 0, {}, [()], None),
    ("MIG instance already in use", 10, 0, {"1g.10gb": 1}, [_group(("1g.10gb", 10, 1))], None),
    (
        "Multiple templates, pick first matching and available",
        20,
        -1,
        {},
        [_group(("1g.10gb", 10, 1)), _group(("2g.20gb", 24, 1))],
        (1, "2g.20gb", 24),
    ),
    (
        "Request memory smaller than template, still match",
        5,
        0,
        {},
        [_group(("1g.10gb", 10, 1))],
        (0, "1g.10gb", 10),
    ),
]


@pytest.mark.parametrize(
    ("case", "mem", "index", "used", "groups", "expected"), FIND_MATCH, ids=[c[0] for c in FIND_MATCH]
)
def test_find_match(
    case: str,
    mem: int,
    index: int,
    used: dict[str, int],
    groups: list[tuple[MigInstance, ...]],
    expected: tuple[int, str, int] | None,
) -> None:
    got = mig_choice(MigState(None if index < 0 else index, dict(used)), groups, mem)
    assert (None if got is None else (got[0], got[1].name, got[1].memory_mib)) == expected


def test_find_match_offers_every_free_profile_of_the_geometry_in_force() -> None:
    """TestFindMatch "No matching MIG template in geometry" differs on purpose, because Volcano's
    own design (docs/design/dynamic-mig.md) keeps the instances of the adopted geometry that a task
    does not take "to the available empty mig instances, for future usage", which its
    pickFromGroup breaks by offering only the profiles already in its usage list.

    Its usage list names 1g.10gb while the geometry in force holds only a free 2g.20gb of 20 MiB:
    Volcano finds no card; we, as HAMi (whose rule Volcano ports and whose usage list holds every
    instance of the geometry), give the 2g.20gb. With Volcano's rule a GPU cut 3 x 2g.10gb +
    1 x 1g.5gb serving one 1g.5gb could never serve a 2g.10gb, although all three are free, while
    the same GPU with nothing in use would serve it."""
    got = mig_choice(MigState(0, {}), [_group(("2g.20gb", 20, 1))], 20)
    assert got is not None and got[1].name == "2g.20gb"


@pytest.mark.parametrize(
    ("case", "instance", "count"),
    [
        ("Add then Sub with valid position", MigInstance("1g.10gb", 10240, 2), 2),
        ("Add twice same instance, then sub once", MigInstance("2g.20gb", 20480, 3), 3),
        ("Sub from unused slot returns 0", MigInstance("3g.30gb", 30720, 1), 1),
    ],
)
def test_add_and_sub_mig_used(case: str, instance: MigInstance, count: int) -> None:
    """TestAddAndSubMigUsed: an instance taken marks its geometry in force and is counted; given
    back, the GPU's usage list is empty again, so the next request may pick any geometry. Every
    slot of the profile can be taken, and no more (mig_choice then finds none)."""
    groups = [(instance,)]
    state = MigState()
    mig_use(state, 0, instance.name, +1)
    assert state.geometry == 0 and state.used == {instance.name: 1}
    mig_use(state, 0, instance.name, -1)
    assert state.geometry is None and state.used == {}
    for _ in range(count):
        got = mig_choice(state, groups, instance.memory_mib)
        assert got is not None
        mig_use(state, got[0], got[1].name, +1)
    assert mig_choice(state, groups, instance.memory_mib) is None


GROUP1 = [{"models": ["A100"], "allowedGeometries": [[
    {"name": "1g.10gb", "memory": 10240, "count": 2},
    {"name": "2g.20gb", "memory": 20480, "count": 1},
]]}]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "factor", "mem", "instance", "card_used"),
    [
        ("MemoryFactor=1, request 10MB matches 1g.10gb", 1, 10, "1g.10gb", 10240),
        ("MemoryFactor=2, request 6GB matches 1g.10gb", 2, 6144, "2g.20gb", 10240),
    ],
)
def test_try_add_and_sub_pod_with_memory_factor(
    case: str, factor: int, mem: int, instance: str, card_used: int
) -> None:
    """TestMIGFactory_TryAddPod_WithMemoryFactor / _AddPod_ / _SubPod_: the request is scaled by
    the factor (6144 x 2 needs the 2g.20gb), the card's used memory grows by the instance's memory
    over the factor, and giving the pod back leaves the card empty. Agent and hub alike."""
    config = parse_mig_config(GROUP1, factor)
    node = gpu_node("n0", count=1, memory=40960, model="A100-SXM4-40GB", mig=True)
    req = device_request(task("p", ann={"volcano.sh/vgpu-mode": "mig"}, mem=mem, cores=50))
    table = DeviceTable([node], config)
    grants = table.grants(req, 0, "")
    assert grants is not None and grants[0].instance is not None and grants[0].instance.name == instance
    table.apply(0, grants, +1)
    assert (int(table.used_mem[0, 0]), int(table.used_cores[0, 0]), int(table.used_num[0, 0])) == (
        card_used,
        50,
        1,
    )
    hub = NodeCards.of(node_cards([node], {}, config)["n0"]).take(req)
    assert hub is not None and int(hub.cards.used_mem[0]) == card_used
    assert hub.states[0] is not None and hub.states[0].used == {instance: 1}
    table.apply(0, grants, -1)
    assert int(table.used_mem[0, 0]) == 0 and table.mig_state[(0, 0)].used == {}


# --- the hub's cards answer as the agent's table does --------------------------------------------

MIG = {"volcano.sh/vgpu-mode": "mig"}
HAMI = {"volcano.sh/vgpu-mode": "hami-core"}
SPREAD = {"volcano.sh/vgpu-podgroup-policy": "spread"}
REQUESTS = [
    {"mem": 4000},
    {"mem": 9000},
    {"mem": 15000},
    {"mem": 30000},
    {"mem": 4000, "number": 2},
    {"mem": 20000, "number": 2},
    {"mem": 4000, "cores": 60},
    {"mem": 4000, "cores": 100},
    {"gpu": 1},
]
# pod annotations: vgpu-mode (against the node's), podgroup spread, GPU UUID lists
HINTS = [
    {},
    MIG,
    HAMI,
    SPREAD,
    {"volcano.sh/vgpu-use-gpuuuid": "GPU-n0-0,GPU-n0-1"},
    {"volcano.sh/vgpu-nouse-gpuuuid": "GPU-n0-2"},
]


def _same_answers(
    table: DeviceTable, reported: dict[str, tuple[CardFree, ...]], name: str, policy: str
) -> None:
    hub = NodeCards.of(reported[name])
    for k, res in enumerate(REQUESTS):
        for ann in HINTS:
            for group in ("", "ja", "jb"):  # no PodGroup, and those of the pods placed
                req = device_request(task(f"q{k}", ann=ann, **res))
                agent = table.grants(req, 0, policy, group)
                ours = hub.fits(req, group)
                want = None if agent is None else [g.device for g in agent]
                got = ours.tolist() if ours.size == req.units else None
                assert got == want, (res, ann, group)


def _gpu_node(mig: bool) -> NodeSpec:
    """Three A100s of 40960 MiB with UUIDs GPU-n0-0.., in MIG mode or not."""
    devices = gpus_from_spec(3, 40960, "A100-SXM4-40GB", mig, "n0")
    alloc = ResourceVector.from_quantities({"cpu": "32", "memory": "128Gi", "pods": 110, "nvidia.com/gpu": 3})
    return NodeSpec("n0", alloc + vgpu_capacity(devices), extensions={GPUS_EXTENSION: devices})


@pytest.mark.parametrize("mig", [True, False])
@pytest.mark.parametrize("policy", ["", "binpack", "spread", "fgd"])
def test_hub_cards_answer_as_the_agent_table_over_a_run_of_placements(policy: str, mig: bool) -> None:
    """Card by card, in the order of the agent's deviceshare.SchedulePolicy, which it reports; on a
    node in MIG mode and on a hami-core node, for pods naming either mode or none, spreading over
    their PodGroup's cards or not, and listing GPU UUIDs to use or avoid."""
    config = parse_mig_config(A100)
    node = _gpu_node(mig)
    table = DeviceTable([node], config)
    live: dict[str, tuple[str, tuple[Grant, ...]]] = {}
    groups: dict[str, str] = {}
    placed = [
        ("a", "ja", MIG, {"mem": 8000}),
        ("b", "jb", {}, {"mem": 10000}),
        ("c", "ja", SPREAD, {"mem": 5000}),
        ("d", "jb", HAMI, {"mem": 2000, "cores": 20}),
        ("e", "ja", {**MIG, **SPREAD}, {"mem": 9000}),
        ("f", "jc", {}, {"gpu": 1}),
        ("g", "jb", SPREAD, {"mem": 4000}),
    ]
    for uid, group, ann, res in placed:
        _same_answers(table, node_cards([node], live, config, policy, groups), "n0", policy)
        req = device_request(task(uid, ann=ann, **res))
        grants = table.grants(req, 0, policy, group)
        if grants is None:
            continue
        table.apply(0, grants, +1, group)
        live[uid], groups[uid] = ("n0", tuple(grants)), group
    assert len(live) >= 4  # enough of the run was placed to test something
    _same_answers(table, node_cards([node], live, config, policy, groups), "n0", policy)
    # and back, one pod at a time (what a victim's eviction gives back)
    for uid in list(live):
        _, grants = live.pop(uid)
        table.apply(0, grants, -1, groups[uid])
        _same_answers(table, node_cards([node], live, config, policy, groups), "n0", policy)


def test_mig_request_passes_the_card_checks_first() -> None:
    """checkNodeGPUSharingPredicateAndScore checks every card (share slots, memory, cores, an
    exclusive 100% request) before the MIG factory picks an instance: a card serving one MIG pod
    has free 1g.5gb slices but takes no pod that wants the whole card's compute."""
    config = parse_mig_config(A100)
    node = gpu_node("n0", count=1, memory=40960, model="A100-SXM4-40GB", mig=True)
    table = DeviceTable([node], config)
    first = table.grants(device_request(task("a", ann=MIG, mem=4000, cores=30)), 0, "")
    assert first is not None
    table.apply(0, first, +1)
    hub = NodeCards.of(node_cards([node], {"a": ("n0", tuple(first))}, config)["n0"])
    for cores, fits in ((60, True), (80, False), (100, False)):
        req = device_request(task("b", ann=MIG, mem=4000, cores=cores))
        assert (table.grants(req, 0, "") is not None) is fits, cores
        assert (hub.take(req) is not None) is fits, cores


def test_reported_mig_card_round_trips_through_json() -> None:
    config = parse_mig_config(A100)
    node = gpu_node("n0", count=1, memory=40960, model="A100-SXM4-40GB", mig=True)
    table = DeviceTable([node], config)
    grants = table.grants(device_request(task("a", ann=MIG, mem=8000)), 0, "")
    assert grants is not None
    (card,) = node_cards([node], {"a": ("n0", tuple(grants))}, config)["n0"]
    assert card.mig == MigCard(config.geometries("A100-SXM4-40GB", 40960), 1, (("2g.10gb", 1),), 1)
    assert CardFree.from_json(card.to_json()) == card
    # an older hub row without the MIG part still reads
    assert CardFree.from_json(card.to_json()[:7]).mig is None
    # the agent's card order travels with its cards, with or without a MIG part
    (ordered,) = node_cards([node], {}, config, "spread")["n0"]
    assert CardFree.from_json(ordered.to_json()) == ordered and ordered.policy == "spread"
    plain = CardFree(24000, 24000, 100, 10, 10, "T4", policy="binpack")
    assert CardFree.from_json(plain.to_json()) == plain
    # the card's UUID and the PodGroups of its vGPU pods, through JSON (the hub's row) and proto
    named = CardFree(24000, 20000, 100, 8, 10, "T4", HAMI_USED, uuid="GPU-1", holders=("ja", "ja"))
    assert CardFree.from_json(named.to_json()) == named
    assert convert.card_of(convert.card_message(named)) == named
    assert convert.card_of(convert.card_message(card)) == card


def test_model_filter_per_card() -> None:
    cards = NodeCards.of(
        (CardFree(24000, 24000, 100, 10, 10, "NVIDIA-H100"), CardFree(24000, 24000, 100, 10, 10, "Tesla-T4"))
    )
    only_t4 = DeviceRequest(number=1, memory_mib=1000, use_types=frozenset({"T4"}))
    not_t4 = DeviceRequest(number=1, memory_mib=1000, nouse_types=frozenset({"T4"}))
    assert cards.fits(only_t4).tolist() == [1]
    assert cards.fits(not_t4).tolist() == [0]
    assert list(itertools.chain(cards.fits(DeviceRequest(number=2, memory_mib=1)).tolist())) == [1, 0]
    assert np.array_equal(cards.fits(DeviceRequest(number=3, memory_mib=1)), np.array([1, 0]))
