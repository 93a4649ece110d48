"""The hub's card fit on every path: MIG instances, GPU-type annotations, HyperNodes, partitions,
preemption, reclaim (whole jobs and pods) and starvation. Each path case runs the same snapshot with
and without the card tables: without them the totals admit (or plan victims), with them the cards
decide, as the agent's deviceshare would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from tests.unit.admission.builders import admitted, job, reason
from vglobal.admission import (
    AdmissionPolicy,
    AdmissionResult,
    ClusterSnap,
    HyperNodeSnap,
    NodeSnap,
    Partitions,
    QueueSnap,
    RunningJob,
    RunningPod,
    Snapshot,
    admit,
)
from vglobal.model.cards import CardFree, CardUse, MigCard
from vglobal.model.gpu_fit import HAMI, MIG
from vglobal.model.mig_fit import MigInstance
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import ResourceVector

MEM, NUM = "volcano.sh/vgpu-memory", "volcano.sh/vgpu-number"
MIG_MODE = {"volcano.sh/vgpu-mode": "mig"}
A100_40 = (
    (MigInstance("1g.5gb", 5120, 7),),
    (MigInstance("2g.10gb", 10240, 3), MigInstance("1g.5gb", 5120, 1)),
    (MigInstance("3g.20gb", 20480, 2),),
    (MigInstance("7g.40gb", 40960, 1),),
)


def vgpu(mib: int, number: int = 1, cpu: int = 1) -> ResourceVector:
    return ResourceVector({"cpu": cpu * 1000, NUM: number * 1000, MEM: mib * 1000})


def card(free_mib: int, memory: int = 24000, used: int = 0, mode: int = 0, model: str = "A100") -> CardFree:
    return CardFree(memory, free_mib, 100, 10 - used, 10, model, mode if used else 0)


def mig_card(geometry: int | None = None, used: tuple[tuple[str, int], ...] = ()) -> CardFree:
    taken = sum(n for _, n in used)
    free = 40960 - sum(i.memory_mib * n for name, n in used for i in A100_40[geometry or 0] if i.name == name)
    return CardFree(
        40960,
        free,
        100,
        10 - taken,
        10,
        "A100-SXM4-40GB",
        MIG if taken else 0,
        MigCard(A100_40, geometry, used),
    )


def node(name: str, cards: tuple[CardFree, ...], cpu: int = 16) -> NodeSnap:
    """Its free totals are its cards' free (as the agent reports both), its allocatable their size."""
    free = ResourceVector(
        {
            "cpu": cpu * 1000,
            NUM: sum(c.free_slots for c in cards) * 1000,
            MEM: sum(c.free_memory_mib for c in cards) * 1000,
        }
    )
    alloc = ResourceVector(
        {
            "cpu": cpu * 1000,
            NUM: sum(c.split for c in cards) * 1000,
            MEM: sum(c.memory_mib for c in cards) * 1000,
        }
    )
    return NodeSnap(name, free, alloc)


def cluster(
    name: str, nodes: Mapping[str, tuple[CardFree, ...]], hypernodes: tuple[HyperNodeSnap, ...] = ()
) -> ClusterSnap:
    snaps = tuple(node(n, cs) for n, cs in nodes.items())
    return ClusterSnap(name, {}, snaps, hypernodes=hypernodes, devices=dict(nodes))


def blind(c: ClusterSnap) -> ClusterSnap:
    """The same cluster as the hub saw it before agents reported cards."""
    return replace(c, devices={})


def snap(*clusters: ClusterSnap, pending: tuple[object, ...], **kw: object) -> Snapshot:
    queues = kw.pop("queues", (QueueSnap("q"),))
    return Snapshot(now=100.0, queues=queues, clusters=clusters, pending=pending, **kw)  # type: ignore[arg-type]


# --- MIG ------------------------------------------------------------------------------------------


def test_mig_gang_goes_to_the_cluster_whose_cards_have_the_slices() -> None:
    # equal totals; on `cut` the one card is cut 7 x 1g.5gb with 6 taken: one slice of 5 GB left
    cut = cluster("cut", {"n0": (mig_card(0, (("1g.5gb", 6),)),)})
    fresh = cluster("fresh", {"n0": (mig_card(),)})
    pending = (job("j", "q", vgpu(4000), 2, gpu_hints=(MIG_MODE,)),)
    assert admitted(admit(snap(cut, fresh, pending=pending))) == {"j": "fresh"}
    # two pods of 1g.5gb: a second card with a free slice would do as well
    two = cluster("two", {"n0": (mig_card(0, (("1g.5gb", 6),)), mig_card(0, (("1g.5gb", 6),)))})
    assert admitted(admit(snap(two, pending=pending))) == {"j": "two"}


def test_mig_gang_that_fits_the_totals_but_no_card_waits_naming_mig() -> None:
    # 2g.10gb geometry in force with all three 2g taken: only the 1g.5gb is left
    cut = cluster("cut", {"n0": (mig_card(1, (("2g.10gb", 3),)),)})
    pending = (job("j", "q", vgpu(8000), gpu_hints=(MIG_MODE,)),)
    result = admit(snap(cut, pending=pending))
    assert admitted(result) == {}
    assert "no node in cluster cut has MIG cards with a free instance for 1 vGPU of 8000 MiB" in reason(
        result, "j"
    )
    assert admitted(admit(snap(blind(cut), pending=pending))) == {"j": "cut"}  # the totals alone admit
    # the same request without the MIG mode takes a hami-core vGPU: not on a card serving MIG
    plain = (job("j", "q", vgpu(8000)),)
    assert admitted(admit(snap(cut, pending=plain))) == {}


def test_mig_instances_taken_in_the_cycle_are_gone_for_the_next_job() -> None:
    # a stale total (all 40960 MiB free) would hold both; the card has one 3g.20gb left
    one = cluster("one", {"n0": (mig_card(2, (("3g.20gb", 1),)),)})
    stale = node("n0", (mig_card(),))
    one = replace(one, nodes=(replace(stale, free=stale.free + vgpu(0, 0, 0)),))
    pending = (
        job("a", "q", vgpu(20000), gpu_hints=(MIG_MODE,)),
        job("b", "q", vgpu(20000), created=1.0, gpu_hints=(MIG_MODE,)),
    )
    result = admit(snap(one, pending=pending))
    assert admitted(result) == {"a": "one"}
    assert "MIG cards with a free instance" in reason(result, "b")


# --- GPU-type annotations ------------------------------------------------------------------------


def test_gpu_type_annotations_filter_cards_per_task() -> None:
    t4 = cluster("t4", {"n0": (card(24000, model="Tesla-T4"),)})
    h100 = cluster("h100", {"n0": (card(24000, model="NVIDIA-H100"),)})
    use_h100 = ({"nvidia.com/use-gputype": "H100"},)
    assert admitted(admit(snap(t4, h100, pending=(job("j", "q", vgpu(1000), gpu_hints=use_h100),)))) == {
        "j": "h100"
    }
    no_h100 = ({"nvidia.com/nouse-gputype": "H100"},)
    assert admitted(admit(snap(h100, t4, pending=(job("j", "q", vgpu(1000), gpu_hints=no_h100),)))) == {
        "j": "t4"
    }
    result = admit(snap(t4, pending=(job("j", "q", vgpu(1000), gpu_hints=use_h100),)))
    assert "no node in cluster t4 has cards of model H100 for 1 vGPU of 1000 MiB" in reason(result, "j")


def test_tasks_of_equal_resources_keep_their_own_gpu_annotations() -> None:
    # one T4 card with room for two vGPUs; the second task asks for an H100
    t4 = cluster("t4", {"n0": (card(24000, model="Tesla-T4"),)})
    two_tasks = job("j", "q", vgpu(1000), 1, gpu_hints=({}, {"nvidia.com/use-gputype": "H100"}))
    two_tasks = replace(two_tasks, gang=((vgpu(1000), 1), (vgpu(1000), 1)), request=vgpu(1000).scale(2))
    assert admitted(admit(snap(t4, pending=(two_tasks,)))) == {}
    same = replace(two_tasks, gpu_hints=({}, {}))
    assert admitted(admit(snap(t4, pending=(same,)))) == {"j": "t4"}


# --- HyperNodes and partitions -------------------------------------------------------------------

HARD = ("hard", 1)


def _split_cluster(name: str) -> ClusterSnap:
    """h1 holds n0, whose two cards have 12000 MiB free each (24000 in total); n1, outside every
    HyperNode, has a free card."""
    half = card(12000, used=1, mode=HAMI)
    return cluster(
        name,
        {"n0": (half, half), "n1": (card(24000),)},
        (HyperNodeSnap("h1", 1, nodes=("n0",)),),
    )


def test_hard_topology_gang_needs_cards_inside_its_hypernode() -> None:
    pending = (job("j", "q", vgpu(20000), network_topology=HARD),)
    result = admit(snap(_split_cluster("c1"), pending=pending))
    assert admitted(result) == {}
    assert "no HyperNode the job's topology allows has both the room and the GPU cards" in reason(result, "j")
    good = cluster("c2", {"m0": (card(24000),)}, (HyperNodeSnap("h2", 1, nodes=("m0",)),))
    assert admitted(admit(snap(_split_cluster("c1"), good, pending=pending))) == {"j": "c2"}


def test_soft_topology_gang_falls_back_to_the_cards_of_the_whole_cluster() -> None:
    pending = (job("j", "q", vgpu(20000), network_topology=("soft", 1)),)
    assert admitted(admit(snap(_split_cluster("c1"), pending=pending))) == {"j": "c1"}


def test_partitions_need_cards_inside_their_hypernode() -> None:
    part = Partitions(vgpu(20000), 1, 1, HARD)
    pending = (job("j", "q", vgpu(20000), partitions=(part,), network_topology=HARD),)
    assert admitted(admit(snap(blind(_split_cluster("c1")), pending=pending))) == {"j": "c1"}  # totals only
    assert admitted(admit(snap(_split_cluster("c1"), pending=pending))) == {}


# --- preemption, reclaim, starvation -------------------------------------------------------------


def _pod(uid: str, node_name: str, device: int, mib: int, preemptable: bool = True) -> RunningPod:
    return RunningPod(uid, node_name, vgpu(mib), preemptable, cards=(CardUse(device, mib, 0),))


def _run(
    uid: str, queue: str, pods: tuple[RunningPod, ...], created: float, priority: int = 1, **kw: object
) -> RunningJob:
    total = ResourceVector()
    for p in pods:
        total = total + p.request
    return RunningJob(
        uid,
        queue,
        "c",
        priority,
        created,
        total,
        {p.node: total for p in pods},
        0.0,
        pods,
        min_available=len(pods),
        **kw,  # type: ignore[arg-type]
    )


def _preempt_snapshot(with_cards: bool) -> Snapshot:
    """Card 0: the newest victim's 8000 MiB beside 8000 of a pod that may not go; card 1: the older
    victim's 20000. The 20000 MiB preemptor needs card 1 emptied: taking the newest alone frees
    enough in total, not on one card."""
    running = (
        _run("new", "q", (_pod("new-0", "n0", 0, 8000),), created=20),
        _run("old", "q", (_pod("old-0", "n0", 1, 20000),), created=10),
        _run("kept", "q", (_pod("kept-0", "n0", 0, 8000, preemptable=False),), created=5, pinned=True),
    )
    cards = (card(8000, used=2, mode=HAMI), card(4000, used=1, mode=HAMI))
    c = cluster("c", {"n0": cards})
    alloc = vgpu(36000, 3, 3)
    preemptor = job("p", "q", vgpu(20000), priority=100, created=30)
    return snap(
        c if with_cards else blind(c),
        pending=(preemptor,),
        running=running,
        queues=(QueueSnap("q", allocated=alloc),),
    )


def _whole(result: AdmissionResult) -> set[str]:
    return {r.victim_uid for r in result.reclaims}


def test_preemption_frees_the_card_the_preemptor_needs() -> None:
    assert _whole(admit(_preempt_snapshot(False))) == {"new"}  # totals: the newest victim is enough
    result = admit(_preempt_snapshot(True))
    assert admitted(result) == {"p": "c"}
    assert _whole(result) == {"old"}  # its card is the one that holds 20000 MiB once empty


def test_preemption_frees_the_cards_of_jobs_known_per_node_only() -> None:
    """The simulator's runs list no pods, only what they use per node and the cards they hold:
    taking one whole gives its cards back the same way."""
    s = _preempt_snapshot(True)
    unlisted = tuple(
        replace(r, pods=(), cards=tuple((p.node, u) for p in r.pods for u in p.cards)) for r in s.running
    )
    result = admit(replace(s, running=unlisted))
    assert admitted(result) == {"p": "c"}
    assert _whole(result) == {"old"}


def test_preemption_that_frees_no_card_enough_does_not_happen() -> None:
    s = _preempt_snapshot(True)
    # the older victim may not go either: no set of victims empties a card enough
    s = replace(s, running=tuple(replace(r, pinned=True) if r.uid == "old" else r for r in s.running))
    result = admit(s)
    assert admitted(result) == {} and result.reclaims == () and result.evictions == ()


def _reclaim_snapshot(beside_pinned: bool, surplus: bool) -> Snapshot:
    """Queue a holds all the node's cpu, more than its half; queue b's job needs 1 cpu and a card
    of 20000 MiB. a's reclaimable job a1 has its (last) pod on card 1, alone or (``beside_pinned``)
    next to 8000 MiB of a pod that may not go. With ``surplus`` a1 has a first pod on card 0 and
    may lose only its last one (minAvailable 1)."""
    pods = [RunningPod("a1-1", "n0", vgpu(8000), cards=(CardUse(1, 8000, 0),))]
    if surplus:
        pods.insert(0, RunningPod("a1-0", "n0", vgpu(8000), cards=(CardUse(0, 8000, 0),)))
    a1 = replace(_run("a1", "a", tuple(pods), created=20), min_available=1)
    kept = [_pod("a0-0", "n0", 0, 12000, preemptable=False)]
    if beside_pinned:
        kept.append(_pod("a0-1", "n0", 1, 8000, preemptable=False))
    a0 = _run("a0", "a", tuple(kept), created=10, pinned=True)
    on_0, on_1 = 12000 + 8000 * surplus, 8000 + 8000 * beside_pinned
    cards = (
        card(24000 - on_0, used=1 + surplus, mode=HAMI),
        card(24000 - on_1, used=1 + beside_pinned, mode=HAMI),
    )
    cpu = len(pods) + len(kept)
    c = cluster("c", {"n0": cards})
    (n0,) = c.nodes
    c = replace(
        c,
        nodes=(
            replace(
                n0, free=n0.free + {"cpu": -16000}, allocatable=n0.allocatable + {"cpu": cpu * 1000 - 16000}
            ),
        ),
    )
    queues = (QueueSnap("a", allocated=vgpu(on_0 + on_1, cpu, cpu)), QueueSnap("b"))
    pending = (job("b0", "b", vgpu(20000), created=100),)
    return snap(c, pending=pending, running=(a1, a0), queues=queues)


def _victims(result: AdmissionResult) -> set[str]:
    return {r.victim_uid for r in result.reclaims} | {p for e in result.evictions for p in e.pods}


def test_reclaim_takes_victims_only_where_their_cards_make_room() -> None:
    for surplus in (False, True):
        # a1 alone on card 1: taking it empties the card
        result = admit(_reclaim_snapshot(False, surplus))
        assert _victims(result) & {"a1", "a1-0", "a1-1"}, surplus
        # beside a pod that stays: card 1 never gets 20000 MiB free, so nothing is taken (the totals
        # alone would take a1's pod)
        blind_result = admit(
            replace(
                _reclaim_snapshot(True, surplus),
                clusters=(blind(_reclaim_snapshot(True, surplus).clusters[0]),),
            )
        )
        assert _victims(blind_result) & {"a1", "a1-1"}, surplus
        result = admit(_reclaim_snapshot(True, surplus))
        assert admitted(result) == {} and _victims(result) == set(), surplus
        assert reason(result, "b0").startswith("no cluster fits gang")


def test_starving_gang_its_cards_can_never_hold_reserves_nothing() -> None:
    # 2 cards of 24000 MiB, nearly full: the totals (48000) would hold a 30000 MiB vGPU once the
    # node is empty, so without cards the starving gang holds capacity; no card ever holds it
    full = (card(4000, used=1, mode=HAMI), card(4000, used=1, mode=HAMI))
    c = cluster("c", {"n0": full})
    pending = (job("j", "q", vgpu(30000), waiting_since=0.0, created=0.0),)
    blind_result = admit(snap(blind(c), pending=pending, policy=AdmissionPolicy(starvation_after=10.0)))
    assert blind_result.decisions["j"].kind == WaitKind.Starving  # type: ignore[union-attr]
    result = admit(snap(c, pending=pending, policy=AdmissionPolicy(starvation_after=10.0)))
    assert result.decisions["j"].kind == WaitKind.NeverFits  # type: ignore[union-attr]
    assert reason(result, "j").endswith("no candidate cluster could hold it even when empty")


def test_cards_of_gangs_dispatched_but_not_placed_are_taken_first() -> None:
    """A gang dispatched in an earlier cycle holds no card in the agent's report until its pods
    are bound: its cards are taken before this cycle's gangs, as its resources are."""
    c = cluster("c", {"n0": (card(24000),)})
    earlier = ((vgpu(20000), 1),)
    pending = (job("j", "q", vgpu(20000)),)
    # the resources are free enough for both (a stale total): only the cards tell
    (n0,) = c.nodes
    roomy = replace(c, nodes=(replace(n0, free=n0.free + vgpu(24000, 10)),))
    assert admitted(admit(snap(replace(roomy, unplaced=(earlier,)), pending=pending))) == {"j": "c"}
    result = admit(
        snap(replace(roomy, unplaced=(earlier,), unplaced_cards=((earlier, ()),)), pending=pending)
    )
    assert admitted(result) == {}
    assert "no node in cluster c has a card with 20000 MiB free (most: 4000 MiB)" in reason(result, "j")
    # a MIG gang takes its instance, with its own annotations
    cut = cluster("m", {"n0": (mig_card(2, (("3g.20gb", 1),)),)})
    (m0,) = cut.nodes
    cut = replace(cut, nodes=(replace(m0, free=m0.free + vgpu(40960, 10)),))
    mig_job = (job("k", "q", vgpu(15000), gpu_hints=(MIG_MODE,)),)
    gone = replace(cut, unplaced=(earlier,), unplaced_cards=((earlier, (MIG_MODE,)),))
    assert admitted(admit(snap(replace(cut, unplaced=(earlier,)), pending=mig_job))) == {"k": "m"}
    assert admitted(admit(snap(gone, pending=mig_job))) == {}


def test_whole_gpus_placed_by_their_count_keep_their_cards_for_later_vgpus() -> None:
    """While no card is shared, a whole-GPU gang is placed by the nvidia.com/gpu count (the same
    answer, cheaper); a vGPU gang later in the cycle still finds the card that gang took."""
    c = cluster("c", {"n0": (card(24000),)})
    (n0,) = c.nodes
    gpu = ResourceVector({"nvidia.com/gpu": 1000})
    c = replace(c, nodes=(replace(n0, free=n0.free + gpu, allocatable=n0.allocatable + gpu),))
    whole = job("a", "q", ResourceVector({"cpu": 1000, "nvidia.com/gpu": 1000}))
    shared = job("b", "q", vgpu(20000), created=1.0)
    result = admit(snap(c, pending=(whole, shared)))
    assert admitted(result) == {"a": "c"}
    assert "no node in cluster c has a card with 20000 MiB free (most: 0 MiB)" in reason(result, "b")
    # and a whole GPU waits for a card a vGPU holds, though the count says one is free
    result = admit(snap(c, pending=(replace(shared, created=0.0), replace(whole, created=1.0))))
    assert admitted(result) == {"b": "c"}
    assert "no node in cluster c has 1 idle GPU card per pod" in reason(result, "a")
