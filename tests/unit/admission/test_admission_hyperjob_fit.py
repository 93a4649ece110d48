"""A HyperJob's child takes the same cluster fit as a lone job (admission/fit.py): partitions,
a job-level network topology, its queue's node groups and vGPU cards. A HyperJob that waits says
which child fits no cluster and why; what its children tried is given back to the cycle."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from tests.unit.admission.builders import admitted, cluster, gpus, job, reason
from tests.unit.admission.test_admission_devices import _cluster as card_cluster
from tests.unit.admission.test_admission_devices import _vgpu
from tests.unit.admission.test_admission_group_limits import CLUSTER as LIMITED_CLUSTER
from tests.unit.admission.test_admission_group_limits import cpu
from tests.unit.admission.test_admission_nodegroups import G2, grouped
from tests.unit.topology.test_admission_partitions import fabric
from vglobal.admission import GroupRef, Partitions, PendingJob, QueueSnap, Snapshot, admit
from vglobal.model.queue_affinity import QueueAffinity
from vglobal.model.resources import ResourceVector

Q = (QueueSnap("q"),)
POD = gpus(8)


def kids(name: str, count: int, make: object = None, queue: str = "q", **kw: object) -> list[PendingJob]:
    """``count`` children of the HyperJob ``name`` (all needed at once), each a gang of 8-GPU pods."""
    pods = int(kw.pop("pods", 4))  # type: ignore[call-overload]
    pod = kw.pop("pod", POD)
    out = []
    for i in range(count):
        base = job(f"{name}-w-{i}", queue, pod, pods, **kw)  # type: ignore[arg-type]
        out.append(replace(base, group=GroupRef(f"ns/{name}", count, count, i)))
    return out


def partitioned(children: list[PendingJob], count: int, size: int) -> list[PendingJob]:
    return [replace(k, partitions=(Partitions(POD, size, count, ("hard", 1)),)) for k in children]


def run(clusters: tuple[object, ...], *pending: PendingJob, queues: tuple[QueueSnap, ...] = Q) -> object:
    return admit(Snapshot(0, queues, clusters, pending))  # type: ignore[arg-type]


def test_children_with_partitions_go_where_switches_hold_every_partition() -> None:
    # a and b have 8 free nodes, 2 per switch; c and d have 8, 4 per switch. Each child is two
    # partitions of 4 pods, each inside one switch: only c and d hold them, one child each.
    clusters = (
        fabric("a", spines=1, switches=4, per_switch=2),
        fabric("b", spines=1, switches=4, per_switch=2),
        fabric("c", spines=1, switches=2, per_switch=4),
        fabric("d", spines=1, switches=2, per_switch=4),
    )
    children = partitioned(kids("hj", 2, pods=8), count=2, size=4)
    assert admitted(run(clusters, *children)) == {"hj-w-0": "c", "hj-w-1": "d"}
    # The same children without partitions take the fullest clusters by name: the fit is the lone job's.
    plain = kids("hj", 2, pods=8)
    assert sorted(admitted(run(clusters, *plain)).values()) == ["a", "b"]


def test_a_child_whose_partitions_fit_no_switch_holds_back_the_hyperjob_naming_it() -> None:
    clusters = (
        fabric("a", spines=1, switches=4, per_switch=2),
        fabric("c", spines=1, switches=2, per_switch=4),
    )
    children = partitioned(kids("hj", 2, pods=8), count=2, size=4)
    result = run(clusters, *children)
    assert admitted(result) == {}  # type: ignore[arg-type]
    text = reason(result, "hj-w-1")  # type: ignore[arg-type]
    assert text == reason(result, "hj-w-0")  # type: ignore[arg-type]
    assert "waits whole" in text and "child hj-w-1 " in text
    assert "no candidate cluster holds 2 partitions of 4 pods in one HyperNode of tier <= 1 (hard)" in text
    assert "best: a can hold 8 of the 8 pods" in text and "its siblings hold c" in text


def test_children_sharing_a_cluster_pack_their_partitions_into_what_the_other_left() -> None:
    # One cluster allowed, two switches of 4 nodes: each child's one partition of 4 takes a switch.
    c = fabric("c", spines=1, switches=2, per_switch=4)
    two = partitioned(kids("hj", 2, pods=4, allowed_clusters=frozenset({"c"})), count=1, size=4)
    assert admitted(run((c,), *two)) == {"hj-w-0": "c", "hj-w-1": "c"}
    # Three such children need three switches: none starts.
    three = partitioned(kids("hj", 3, pods=4, allowed_clusters=frozenset({"c"})), count=1, size=4)
    result = run((c,), *three)
    assert admitted(result) == {}  # type: ignore[arg-type]
    assert "child hj-w-2 " in reason(result, "hj-w-0")  # type: ignore[arg-type]


def test_a_child_with_a_hard_network_topology_goes_where_one_hypernode_holds_it() -> None:
    # Each child is 4 pods within one tier-1 HyperNode: a's switches have 2 nodes, c's and d's 4.
    clusters = (
        fabric("a", spines=1, switches=4, per_switch=2),
        fabric("c", spines=1, switches=1, per_switch=4),
        fabric("d", spines=1, switches=1, per_switch=4),
    )
    children = kids("hj", 2, pods=4, network_topology=("hard", 1))
    assert sorted(admitted(run(clusters, *children)).values()) == ["c", "d"]
    result = run(clusters[:2], *children)
    text = reason(result, "hj-w-1")  # type: ignore[arg-type]
    assert "waits whole" in text and "child hj-w-1 " in text
    assert "no HyperNode of tier <= 1 holds it in any candidate cluster (best: a can hold 4 of the 4" in text


def test_a_child_with_a_soft_network_topology_falls_back_to_the_whole_cluster() -> None:
    clusters = (
        fabric("a", spines=1, switches=4, per_switch=2),
        fabric("b", spines=1, switches=4, per_switch=2),
    )
    children = kids("hj", 2, pods=4, network_topology=("soft", 1))
    assert sorted(admitted(run(clusters, *children)).values()) == ["a", "b"]


def test_children_fit_only_on_their_queues_node_groups() -> None:
    # Both clusters have room for 2 pods; only west's room is in g2.
    clusters = (grouped("east", ["g1", "g1"]), grouped("west", ["g2", "g2"]), grouped("south", ["g2", "g2"]))
    queues = (QueueSnap("q", affinity=G2),)
    children = kids("hj", 2, pods=2)
    got = admitted(run(clusters, *children, queues=queues))  # type: ignore[arg-type]
    assert sorted(got.values()) == ["south", "west"]
    result = run(clusters[:2], *children, queues=queues)
    text = reason(result, "hj-w-1")  # type: ignore[arg-type]
    assert "child hj-w-1 " in text and "queue q allows node groups g2" in text


def test_children_asking_for_vgpus_are_packed_onto_cards() -> None:
    # Equal memory totals; only c2 and c3 hold 20000 MiB on one card.
    clusters = (card_cluster("c1", 12000, 12000), card_cluster("c2", 0, 24000), card_cluster("c3", 24000))
    children = kids("hj", 2, pods=1, pod=_vgpu(20000))
    assert sorted(admitted(run(clusters, *children)).values()) == ["c2", "c3"]
    result = run(clusters[:2], *children)
    text = reason(result, "hj-w-1")  # type: ignore[arg-type]
    assert "child hj-w-1 " in text and "no node in cluster c1 has a card with 20000 MiB free" in text


def test_what_a_waiting_hyperjob_tried_is_free_for_the_next_job() -> None:
    # Child 0 fits a, child 1 fits nowhere: the HyperJob waits, and a later lone job gets a whole.
    clusters = (cluster("a", 4, gpus(8)), cluster("b", 1, gpus(8)))
    children = kids("hj", 2, pods=4)
    solo = job("solo", "q", POD, 4, created=5.0)
    result = run(clusters, *children, solo)
    assert admitted(result) == {"solo": "a"}  # type: ignore[arg-type]
    assert "child hj-w-1 " in reason(result, "hj-w-0")  # type: ignore[arg-type]


def test_cards_a_waiting_hyperjob_tried_are_free_for_the_next_job() -> None:
    # Child 0 takes c2's card in the trial, child 1 has no card: the card goes back to the lone job.
    clusters = (card_cluster("c1", 12000, 12000), card_cluster("c2", 0, 24000))
    children = kids("hj", 2, pods=1, pod=_vgpu(20000))
    solo = job("solo", "q", _vgpu(20000), created=5.0)
    assert admitted(run(clusters, *children, solo)) == {"solo": "c2"}  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(12))
def test_a_hyperjob_that_waits_whole_changes_nothing_for_the_cycles_other_jobs(seed: int) -> None:
    # The same cycle with the HyperJob's queue open (its children tried, then taken back: one of
    # them can never fit) and closed (never tried): every other job is decided the same.
    rnd = random.Random(seed)
    clusters = tuple(cluster(f"c{k}", 6, gpus(8)) for k in range(4))
    others = tuple(
        job(f"j{n:02d}", f"q{n % 3}", gpus(rnd.choice((1, 2, 4, 8))), rnd.randint(1, 4), created=float(n))
        for n in range(40)
    )
    children = kids("hj", 3, queue="hq", pods=2, created=-1.0)
    children[2] = replace(children[2], gang=((gpus(16), 1),), request=gpus(16))
    queues = tuple(QueueSnap(q) for q in ("q0", "q1", "q2"))
    tried = admit(Snapshot(0, (*queues, QueueSnap("hq")), clusters, (*others, *children)))
    untried = admit(Snapshot(0, (*queues, QueueSnap("hq", open=False)), clusters, (*others, *children)))
    assert "child hj-w-2 " in reason(tried, "hj-w-0")
    assert {u: tried.decisions[u] for u in (j.uid for j in others)} == {
        u: untried.decisions[u] for u in (j.uid for j in others)
    }
    assert admitted(tried)  # the cycle admitted something beside it


def test_children_keep_to_their_queues_node_group_limits_and_a_waiting_one_gives_its_count_back() -> None:
    # Only g1 allowed, 6 cpu of it: two children of 4 x 1 cpu on the one cluster pass the limit
    # together (8), so the HyperJob waits; a later lone job of 4 x 1 then fits the limit whole.
    only_g1 = QueueSnap(
        "q", affinity=QueueAffinity(required=("g1",)), node_group_limits={"g1": ResourceVector({"cpu": 6000})}
    )
    children = kids("hj", 2, pods=4, pod=cpu(1), allowed_clusters=frozenset({"c"}))
    solo = job("solo", "q", cpu(1), 4, created=5.0)
    result = run((LIMITED_CLUSTER,), *children, solo, queues=(only_g1,))
    assert admitted(result) == {"solo": "c"}  # type: ignore[arg-type]
    text = reason(result, "hj-w-0")  # type: ignore[arg-type]
    assert "child hj-w-1 " in text and "queue q limits what it holds in node groups g1" in text
    # Children of 4 and 2 pods stay within it: both start.
    fits = [children[0], replace(children[1], gang=((cpu(1), 2),), request=cpu(2))]
    assert admitted(run((LIMITED_CLUSTER,), *fits, queues=(only_g1,))) == {"hj-w-0": "c", "hj-w-1": "c"}  # type: ignore[arg-type]
