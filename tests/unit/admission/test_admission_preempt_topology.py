"""Preemption for a hard-topology gang takes its victims inside ONE HyperNode of its allowed tier
(Volcano's gang-aware, HyperNode-first eviction: pkg/scheduler/actions/gangpreempt, its
``preemptJobInDomains`` and ``selectDomainBundles``), and only where the gang then fits whole.

Cases named ``TestSelectDomainVictims_*`` follow gangpreempt_test.go (its domain "d1" is a tier-1
HyperNode here); the others are the ToR scenarios of two switches of two 4-cpu nodes.
"""

from __future__ import annotations

import random
from dataclasses import replace

from tests.unit.admission.builders import job
from tests.unit.admission.test_admission_preempt import HIGH, Pod, Run, _running, cpu
from vglobal.admission import AdmissionResult, Admit, ClusterSnap, NodeSnap, QueueSnap, Snapshot, admit
from vglobal.admission.snapshot import HyperNodeSnap
from vglobal.model.resources import ResourceVector

TORS = {"t1": ("n1", "n2"), "t2": ("n3", "n4")}


def _decide(
    running: tuple[Run, ...],
    pods: int = 2,
    size: float = 4,
    topology: tuple[str, int | None] | None = ("hard", 1),
    tors: dict[str, tuple[str, ...]] = TORS,
    spine: bool = True,
    hypernodes: bool = True,
    excluded: frozenset[str] = frozenset(),
) -> AdmissionResult:
    used: dict[str, ResourceVector] = {}
    for r in running:
        for p in r.pods:
            used[p.node] = used.get(p.node, ResourceVector()) + cpu(p.size)
    names = [n for members in tors.values() for n in members]
    nodes = tuple(NodeSnap(n, cpu(4) - used.get(n, ResourceVector()), cpu(4)) for n in names)
    hns = [HyperNodeSnap(t, 1, "spine" if spine else None, members) for t, members in tors.items()]
    if spine:
        hns.append(HyperNodeSnap("spine", 2, None, tuple(names)))
    alloc = ResourceVector()
    for v in used.values():
        alloc = alloc + v
    gang = job("gang", "q1", cpu(size), pods, priority=HIGH, created=10)
    gang = replace(gang, network_topology=topology, excluded_clusters=excluded)
    return admit(
        Snapshot(
            now=100.0,
            queues=(QueueSnap("q1", allocated=alloc),),
            clusters=(ClusterSnap("c", {}, nodes, True, tuple(hns) if hypernodes else ()),),
            pending=(gang,),
            running=tuple(_running(r) for r in running),
        )
    )


def _fillers(**priority: int) -> tuple[Run, ...]:
    """One single-pod 4-cpu job per node, named after its node, of the given priorities."""
    return tuple(Run(f"f-{n}", (Pod(f"f-{n}-0", n, 4),), 1, priority=p) for n, p in priority.items())


def _whole(result: AdmissionResult) -> set[str]:
    return {r.victim_uid for r in result.reclaims if r.preempted}


def test_a_hard_topology_gang_takes_its_victims_inside_one_tor() -> None:
    # the lowest priority filler of each ToR would make room for 2 pods in the cluster, in neither ToR
    running = _fillers(n1=1, n3=1, n2=2, n4=2)
    result = _decide(running)
    assert _whole(result) == {"f-n1", "f-n2"}  # ToR t1: ties go by name
    decision = result.decisions["gang"]
    assert isinstance(decision, Admit) and set(decision.nominated) == {"n1", "n2"}
    # without a topology the two lowest priority fillers are enough, one per ToR
    assert _whole(_decide(running, topology=None)) == {"f-n1", "f-n3"}


def test_a_gang_handed_back_by_its_cluster_takes_no_second_round_of_victims_there() -> None:
    # after --bind-timeout the agent hands the gang back and the hub keeps it off that cluster for a
    # while (its excluded clusters): no plan there, so no victim either
    result = _decide(_fillers(n1=1, n3=1, n2=2, n4=2), excluded=frozenset({"c"}))
    assert not isinstance(result.decisions["gang"], Admit)
    assert not _whole(result) and not result.evictions


def test_the_hypernode_with_the_fewest_victims_wins() -> None:
    # t1 has a free node: one victim there beats two of lower priority in t2
    running = _fillers(n2=5, n3=1, n4=1)
    result = _decide(running)
    assert _whole(result) == {"f-n2"}
    decision = result.decisions["gang"]
    assert isinstance(decision, Admit) and set(decision.nominated) == {"n1", "n2"}


def test_no_victim_when_no_hypernode_of_the_tier_can_hold_the_gang() -> None:
    # 3 pods of 4 cpu: no ToR of 2 nodes holds them even empty, so nothing is evicted
    running = _fillers(n1=1, n2=1, n3=1, n4=1)
    result = _decide(running, pods=3)
    assert not isinstance(result.decisions["gang"], Admit)
    assert not _whole(result) and not result.evictions
    # tier 2 (the spine) holds them: three victims anywhere under it
    assert len(_whole(_decide(running, pods=3, topology=("hard", 2)))) == 3


def test_no_victim_for_a_hard_topology_on_a_cluster_without_hypernodes() -> None:
    # the gang could never be placed there: evicting for it would free room for nothing
    running = _fillers(n1=1, n2=1, n3=1, n4=1)
    result = _decide(running, hypernodes=False)
    assert not isinstance(result.decisions["gang"], Admit)
    assert not _whole(result) and not result.evictions


def test_select_domain_victims_respect_allow_whole_bundle() -> None:
    # TestSelectDomainVictims_RespectAllowWholeBundle: a victim at its minAvailable goes only as a
    # whole bundle; the hub allows whole bundles (allowWholeBundle true), so it is taken whole
    running = (Run("victim", (Pod("victim-0", "n1", 4),), 1, priority=10),)
    result = _decide(running, pods=1, tors={"d1": ("n1",)}, spine=False)
    assert _whole(result) == {"victim"}


def test_select_domain_victims_respect_victim_job_preemptable() -> None:
    # TestSelectDomainVictims_RespectVictimJobPreemptable: a job marked not preemptable is no victim
    running = (Run("victim", (Pod("victim-0", "n1", 4, preemptable=False),), 1, priority=10),)
    result = _decide(running, pods=1, tors={"d1": ("n1",)}, spine=False)
    assert not isinstance(result.decisions["gang"], Admit)
    assert not _whole(result) and not result.evictions


def test_select_domain_victims_allow_victim_job_when_preemptable_unset() -> None:
    # TestSelectDomainVictims_AllowVictimJobWhenPreemptableUnset: unset means preemptable
    running = (Run("victim", (Pod("victim-0", "n1", 4),), 1, priority=10),)
    assert _whole(_decide(running, pods=1, tors={"d1": ("n1",)}, spine=False)) == {"victim"}


def test_reclaim_for_a_hard_topology_gang_takes_its_victims_inside_one_tor() -> None:
    # queue "over" holds all 16 cpu (deserved 8) in four one-node jobs; "under"'s gang of 2 x 4 cpu
    # reclaims whole jobs: newest first, blind to ToRs, that is one per ToR
    order = ("n1", "n3", "n2", "n4")
    running = tuple(
        _running(Run(f"f-{n}", (Pod(f"f-{n}-0", n, 4),), 1, created=float(k)))
        for k, n in enumerate(order)
    )
    running = tuple(replace(r, queue="over") for r in running)
    nodes = tuple(NodeSnap(n, cpu(0), cpu(4)) for n in ("n1", "n2", "n3", "n4"))
    hns = tuple(HyperNodeSnap(t, 1, None, members) for t, members in TORS.items())
    queues = (
        QueueSnap("under", deserved=cpu(8)),
        QueueSnap("over", deserved=cpu(8), allocated=cpu(16)),
    )

    def reclaimed(topology: tuple[str, int] | None) -> set[str]:
        gang = replace(job("gang", "under", cpu(4), 2), network_topology=topology)
        result = admit(Snapshot(100.0, queues, (ClusterSnap("c", {}, nodes, True, hns),), (gang,), running))
        return {r.victim_uid for r in result.reclaims}

    assert reclaimed(None) == {"f-n2", "f-n4"}
    assert reclaimed(("hard", 1)) in ({"f-n1", "f-n2"}, {"f-n3", "f-n4"})


def test_every_hard_topology_preemption_frees_and_fills_one_tor() -> None:
    # seeded: fillers of random sizes and priorities on three ToRs of two nodes; whenever the gang
    # preempts, its nodes and every victim's pods sit in one ToR, and the gang fits there
    rng = random.Random(7)
    tors = {"t1": ("n1", "n2"), "t2": ("n3", "n4"), "t3": ("n5", "n6")}
    tor_of = {n: t for t, members in tors.items() for n in members}
    preempted = 0
    for k in range(300):
        running = []
        for n in tor_of:
            left = 4
            for i in range(rng.randint(0, 2)):
                size = rng.choice([1, 2, 4])
                if size <= left:
                    left -= size
                    prio = rng.choice([1, 2, 50, 200])
                    running.append(Run(f"r{k}-{n}-{i}", (Pod(f"r{k}-{n}-{i}-0", n, size),), 1, priority=prio))
        result = _decide(tuple(running), pods=rng.randint(1, 3), size=rng.choice([1, 2, 4]), tors=tors)
        decision = result.decisions["gang"]
        if not (isinstance(decision, Admit) and decision.preempting):
            continue
        preempted += 1
        gone = _whole(result) | {e.victim_uid for e in result.evictions}
        nodes = {p.node for r in running if r.uid in gone for p in r.pods} | set(decision.nominated)
        assert len({tor_of[n] for n in nodes}) == 1, (k, nodes)
    assert preempted > 30  # the property is exercised
