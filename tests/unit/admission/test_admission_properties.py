"""Invariants of admit() over random snapshots (hypothesis)."""

from __future__ import annotations

import functools
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vglobal.admission import (
    AdmissionPolicy,
    Admit,
    ClusterSnap,
    NodeSnap,
    PendingJob,
    QueueSnap,
    RunningJob,
    Snapshot,
    Wait,
    admit,
)
from vglobal.model.resources import EMPTY, ResourceVector

GPU = "nvidia.com/gpu"


def vec(cpu: int, gpu: int) -> ResourceVector:
    return ResourceVector({"cpu": cpu * 1000, GPU: gpu * 1000})


@st.composite
def snapshots(draw: st.DrawFn, flat: bool = False) -> Snapshot:
    queues: list[QueueSnap] = []
    names: list[str] = []
    for i in range(draw(st.integers(1, 3))):
        top = f"t{i}"
        cap = draw(st.none() | st.builds(vec, st.integers(0, 64), st.integers(0, 32)))
        g = draw(st.sampled_from([EMPTY, vec(0, 4), vec(8, 8)]))
        kids = 0 if flat else draw(st.integers(0, 2))
        queues.append(
            QueueSnap(
                top,
                weight=draw(st.integers(1, 4)),
                capability=cap,
                guarantee=g if not kids else EMPTY,
                priority=draw(st.sampled_from([0, 0, 1])),
            )
        )
        if not kids:
            names.append(top)
        for k in range(kids):
            leaf = f"{top}-{k}"
            cap = draw(st.none() | st.builds(vec, st.integers(0, 64), st.integers(0, 32)))
            queues.append(
                QueueSnap(
                    leaf,
                    parent=top,
                    weight=draw(st.integers(1, 4)),
                    capability=cap,
                    guarantee=draw(st.sampled_from([EMPTY, vec(0, 4)])),
                )
            )
            names.append(leaf)
    clusters = []
    for c in range(draw(st.integers(1, 3))):
        nodes = []
        for n in range(draw(st.integers(0, 4))):
            alloc = vec(draw(st.sampled_from([8, 32])), draw(st.sampled_from([0, 4, 8])))
            used = vec(draw(st.integers(0, alloc["cpu"] // 1000)), draw(st.integers(0, alloc[GPU] // 1000)))
            nodes.append(NodeSnap(f"n{n}", alloc - used, alloc))
        clusters.append(
            ClusterSnap(
                f"c{c}",
                {"zone": draw(st.sampled_from("ab"))},
                tuple(nodes),
                schedulable=draw(st.booleans() | st.just(True)),
            )
        )
    pending = []
    for j in range(draw(st.integers(0, 25))):
        pod = vec(draw(st.integers(0, 8)), draw(st.sampled_from([0, 1, 2, 4, 8])))
        count = draw(st.integers(1, 4))
        pending.append(
            PendingJob(
                uid=f"j{j:02d}",
                name=f"j{j}",
                namespace="ns",
                queue=draw(st.sampled_from(names)),
                priority=draw(st.sampled_from([0, 10])),
                created=float(draw(st.integers(0, 5))),
                waiting_since=float(draw(st.integers(0, 1000))),
                request=pod.scale(count),
                gang=((pod, count),),
                cluster_selector=draw(st.sampled_from([{}, {}, {"zone": "a"}])),
            )
        )
    return Snapshot(
        now=1000.0,
        queues=tuple(queues),
        clusters=tuple(clusters),
        pending=tuple(pending),
        policy=AdmissionPolicy(placement=draw(st.sampled_from(["binpack", "spread"]))),
    )


def _key(v: ResourceVector) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(v.items()))


def packable(free: list[ResourceVector], pods: list[ResourceVector]) -> bool:
    """Whether all ``pods`` fit on nodes with ``free`` at once: an independent, exact search (the
    nodes differ only in what is free on them). Checking in the order admission took the gangs with
    first-fit is not enough: admission packs by its own node order (binpack, spread), and a gang it
    fits after others can be one that first-fit no longer fits."""
    order = sorted((p for p in pods if any(p.values())), key=lambda p: (-p.get(GPU, 0), -p.get("cpu", 0)))

    @functools.cache
    def place(i: int, nodes: tuple[ResourceVector, ...]) -> bool:
        if i == len(order):
            return True
        pod, tried = order[i], set()
        for k, node in enumerate(nodes):
            if node in tried or not pod.fits_in(node):
                continue
            tried.add(node)
            rest = tuple(sorted((*nodes[:k], node - pod, *nodes[k + 1 :]), key=_key))
            if place(i + 1, rest):
                return True
        return False

    return place(0, tuple(sorted(free, key=_key)))


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(snapshots())
def test_every_admitted_gang_fits_its_cluster_and_no_job_is_lost(snap: Snapshot) -> None:
    result = admit(snap)
    assert set(result.decisions) == {j.uid for j in snap.pending}
    by_uid = {j.uid: j for j in snap.pending}
    usable = {c.name for c in snap.clusters if c.schedulable}
    pods: dict[str, list[ResourceVector]] = {c.name: [] for c in snap.clusters}
    for uid in result.admitted_order:
        d = result.decisions[uid]
        assert isinstance(d, Admit)
        assert d.cluster in usable
        j = by_uid[uid]
        labels = next(c.labels for c in snap.clusters if c.name == d.cluster)
        assert all(labels.get(k) == v for k, v in j.cluster_selector.items())
        ((pod, count),) = j.gang
        pods[d.cluster] += [pod] * count
    for c in snap.clusters:  # every gang admitted to a cluster fits there, all of them together
        assert packable([n.free for n in c.nodes], pods[c.name]), f"the gangs admitted to {c.name} do not fit"


@FAST
@given(snapshots())
def test_never_over_capability_at_any_level(snap: Snapshot) -> None:
    result = admit(snap)
    for name, q in result.queues.items():
        if name == "root" or q.real_capability is None:
            continue
        before = result.queues[name].allocated - sum(
            (
                j.request
                for j in snap.pending
                if isinstance(result.decisions[j.uid], Admit)
                and (j.queue == name or j.queue.startswith(name + "-"))
            ),
            EMPTY,
        )
        for r, amount in q.allocated.items():
            if amount > before[r]:  # only this cycle's admissions are bounded by it
                assert amount <= q.real_capability[r], (name, r)


@FAST
@given(snapshots(flat=True))
def test_a_guarantee_is_never_taken_by_another_queue(snap: Snapshot) -> None:
    result = admit(snap)
    got = {j.queue for j in snap.pending if isinstance(result.decisions[j.uid], Admit)}
    free = ResourceVector()
    for c in snap.clusters:
        if c.schedulable:
            for n in c.nodes:
                free = free + n.free
    used = sum(
        (
            j.gang[0][0].scale(j.gang[0][1])
            for j in snap.pending
            if isinstance(result.decisions[j.uid], Admit)
        ),
        EMPTY,
    )
    after = free - used
    owed = sum(((q.guarantee - q.allocated).pos() for q in snap.queues if q.name not in got), EMPTY)
    for r, amount in owed.items():
        if used[r] > 0:  # someone took this resource: it must have left what the idle queues are owed
            assert after[r] >= amount, r


@FAST
@given(snapshots())
def test_deterministic_and_independent_of_input_order(snap: Snapshot) -> None:
    first = admit(snap)
    again = admit(snap)
    shuffled = admit(
        replace(snap, queues=snap.queues[::-1], clusters=snap.clusters[::-1], pending=snap.pending[::-1])
    )
    for other in (again, shuffled):
        assert other.decisions == first.decisions
        assert other.admitted_order == first.admitted_order
        assert other.queues == first.queues


@st.composite
def busy_snapshots(draw: st.DrawFn) -> Snapshot:
    """Flat queues with running jobs placed on the nodes, and pending jobs that may need reclaim."""
    names = [f"q{i}" for i in range(draw(st.integers(2, 4)))]
    queues = {
        n: QueueSnap(
            n,
            weight=draw(st.integers(1, 3)),
            guarantee=draw(st.sampled_from([EMPTY, vec(0, 4)])),
            reclaimable=draw(st.booleans() | st.just(True)),
        )
        for n in names
    }
    clusters, running = [], []
    usage: dict[str, ResourceVector] = {}
    for c in range(draw(st.integers(1, 2))):
        nodes = []
        for n in range(draw(st.integers(1, 3))):
            alloc = vec(32, 8)
            free = alloc
            for k in range(draw(st.integers(0, 8))):
                req = vec(1, draw(st.sampled_from([1, 2])))
                if not req.fits_in(free):
                    break
                free = free - req
                q = draw(st.sampled_from(names))
                usage[q] = usage.get(q, EMPTY) + req
                running.append(
                    RunningJob(
                        f"r{c}{n}{k}",
                        q,
                        f"c{c}",
                        draw(st.sampled_from([0, 5])),
                        float(draw(st.integers(0, 9))),
                        req,
                        {f"n{n}": req},
                    )
                )
            nodes.append(NodeSnap(f"n{n}", free, alloc))
        clusters.append(ClusterSnap(f"c{c}", {}, tuple(nodes)))
    pending = []
    for j in range(draw(st.integers(1, 8))):
        pod = vec(1, draw(st.sampled_from([2, 4, 8])))
        pending.append(
            PendingJob(
                f"j{j}", f"j{j}", "ns", draw(st.sampled_from(names)), 0, float(j), 990.0, pod, ((pod, 1),)
            )
        )
    qs = tuple(replace(q, allocated=usage.get(q.name, EMPTY)) for q in queues.values())
    return Snapshot(1000.0, qs, tuple(clusters), tuple(pending), tuple(running))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_snapshots())
def test_reclaim_takes_a_victim_only_while_its_queue_is_above_deserved_and_keeps_guarantees(snap: Snapshot) -> None:
    result = admit(snap)
    by_uid = {r.uid: r for r in snap.running}
    pending = {j.uid: j for j in snap.pending}
    reclaimable = {q.name for q in snap.queues if q.reclaimable}
    assert len({r.victim_uid for r in result.reclaims}) == len(result.reclaims)
    left: dict[str, ResourceVector] = {}
    for r in result.reclaims:
        victim = by_uid[r.victim_uid]
        assert victim.queue in reclaimable and victim.queue != pending[r.for_uid].queue
        assert victim.cluster == r.cluster
        figures = result.queues[victim.queue]
        before = left.get(victim.queue, figures.allocated)
        # Volcano's Reclaimable rule: before it goes, its queue (less the victims it gave up
        # already) is above its deserved on a resource it requests, or deserves none of them
        asks = [n for n in victim.request if n != "pods" and figures.deserved[n] > 0]
        assert not asks or any(before[n] > figures.deserved[n] for n in asks), (victim.uid, before, figures.deserved)
        left[victim.queue] = before - victim.request
    for q, after in left.items():
        for name, g in result.queues[q].guarantee.items():
            assert after[name] >= g, (q, name)  # a guarantee is never reclaimed


@FAST
@given(snapshots(), st.integers(1, 4))
def test_an_admission_budget_admits_a_prefix_of_the_same_order(snap: Snapshot, budget: int) -> None:
    full = admit(snap)
    capped = admit(replace(snap, policy=replace(snap.policy, max_admissions=budget)))
    assert capped.admitted_order == full.admitted_order[:budget]
    assert set(capped.decisions) == set(full.decisions)  # every job still gets a decision
    for uid in full.admitted_order[budget:]:
        wait = capped.decisions[uid]
        assert isinstance(wait, Wait) and wait.reason.startswith("waiting its turn: this cycle admitted")
    assert {r.victim_uid for r in capped.reclaims} <= {r.victim_uid for r in full.reclaims}
