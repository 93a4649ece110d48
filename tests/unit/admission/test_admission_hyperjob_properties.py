"""Invariants of admit() over random small snapshots with HyperJobs (hypothesis): full clusters,
running victims of several priorities and queues, running children, minAvailable below the
children's count, queues at their limits."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vglobal.admission import (
    Admit,
    ClusterSnap,
    GroupRef,
    NodeSnap,
    PendingJob,
    QueueSnap,
    RunningJob,
    RunningPod,
    Snapshot,
    Wait,
    admit,
)
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import EMPTY, ResourceVector

NODES = 2  # per cluster, 4 cpu each


def cpu(n: int) -> ResourceVector:
    return ResourceVector({"cpu": n * 1000})


@st.composite
def hyperjob_snapshots(draw: st.DrawFn) -> Snapshot:
    queues = [f"q{i}" for i in range(draw(st.integers(1, 3)))]
    keys = [f"ns/hj{h}" for h in range(draw(st.integers(1, 2)))]
    sizes = {k: draw(st.integers(2, 4)) for k in keys}
    homes = {k: draw(st.sampled_from(queues)) for k in keys}
    running: list[RunningJob] = []
    sibling: dict[str, set[int]] = {k: set() for k in keys}  # children already running
    clusters = []
    for c in "abc"[: draw(st.integers(1, 3))]:
        node = 0
        while node < NODES:
            width = draw(st.integers(0, NODES - node))
            if width == 0:
                node += 1  # left free
                continue
            uid = f"r-{c}{node}"
            queue, group = draw(st.sampled_from(queues)), None
            if draw(st.integers(0, 4)) == 0:  # a HyperJob's child that runs
                group = draw(st.sampled_from(keys))
                free = sorted(set(range(sizes[group])) - sibling[group])
                if len(free) > 1:
                    index = draw(st.sampled_from(free))
                    sibling[group].add(index)
                    uid, queue = f"{group.split('/')[1]}-w-{index}", homes[group]
                else:
                    group = None
            hosts = [f"{c}-n{k}" for k in range(node, node + width)]
            pods = tuple(
                RunningPod(f"{uid}/p{k}", h, cpu(4), draw(st.integers(0, 5)) > 0) for k, h in enumerate(hosts)
            )
            running.append(
                RunningJob(
                    uid,
                    queue,
                    c,
                    draw(st.sampled_from([1, 50, 100])),
                    0.0,
                    cpu(4 * width),
                    {h: cpu(4) for h in hosts},
                    0.0,
                    pods if draw(st.booleans()) else (),  # else known per node only
                    draw(st.integers(1, width)),
                    group=group,
                )
            )
            node += width
        used = {h for r in running if r.cluster == c for h in r.placements}
        clusters.append(
            ClusterSnap(
                c,
                {},
                tuple(
                    NodeSnap(f"{c}-n{k}", cpu(0 if f"{c}-n{k}" in used else 4), cpu(4)) for k in range(NODES)
                ),
            )
        )
    pending: list[PendingJob] = []
    for key in keys:
        size, base = sizes[key], draw(st.sampled_from([1, 50, 100]))
        ref_min = draw(st.integers(1, size))
        for index in range(size):
            if index in sibling[key]:
                continue
            count = draw(st.integers(1, 2))
            uid = f"{key.split('/')[1]}-w-{index}"
            priority = base + draw(st.sampled_from([0, 0, 10]))
            ref = GroupRef(key, ref_min, size, index)
            gang = ((cpu(4), count),)
            pending.append(
                PendingJob(uid, uid, "ns", homes[key], priority, 10.0, 10.0, cpu(4 * count), gang, group=ref)
            )
    for j in range(draw(st.integers(0, 2))):
        queue, priority = draw(st.sampled_from(queues)), draw(st.sampled_from([1, 50, 100]))
        pending.append(PendingJob(f"lone{j}", f"lone{j}", "ns", queue, priority, 20.0, 20.0, cpu(4), ((cpu(4), 1),)))
    limit = st.none() | st.integers(0, 6).map(lambda n: cpu(4 * n))
    snaps = []
    for q in queues:
        held = sum((r.request for r in running if r.queue == q), EMPTY)
        snaps.append(
            QueueSnap(
                q,
                weight=draw(st.integers(1, 3)),
                capability=draw(limit),
                deserved=draw(limit),
                reclaimable=draw(st.booleans()),
                allocated=held,
            )
        )
    return Snapshot(100.0, tuple(snaps), tuple(clusters), tuple(pending), tuple(running))


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(hyperjob_snapshots())
def test_hyperjob_decisions_are_whole_and_take_only_allowed_victims(snap: Snapshot) -> None:
    result = admit(snap)  # never raises
    pending = {j.uid: j for j in snap.pending}
    assert set(result.decisions) == set(pending)  # one decision per pending job
    admitted = {uid for uid, d in result.decisions.items() if isinstance(d, Admit)}
    assert len(result.admitted_order) == len(set(result.admitted_order))  # none admitted twice
    assert set(result.admitted_order) == admitted
    names = {c.name for c in snap.clusters}
    assert all(result.decisions[u].cluster in names for u in admitted)  # type: ignore[union-attr]
    for key in {j.group.key for j in snap.pending if j.group is not None}:
        kids = [j for j in snap.pending if j.group is not None and j.group.key == key]
        runs = sum(1 for r in snap.running if r.group == key)
        got = sum(1 for j in kids if j.uid in admitted)
        if got:
            assert got + runs >= kids[0].group.min_available, key  # type: ignore[union-attr]
    by_uid = {r.uid: r for r in snap.running}
    reclaimable = {q.name for q in snap.queues if q.reclaimable}
    victims = [(e.job_uid, e.for_uid, not e.reclaimed) for e in result.evictions]
    victims += [(r.victim_uid, r.for_uid, r.preempted) for r in result.reclaims]
    for victim_uid, for_uid, preempted in victims:
        victim, taker = by_uid[victim_uid], pending[for_uid]
        # admitted in the victims' place, or (whole jobs stopped) admitted once they stop
        decided = result.decisions[for_uid]
        assert for_uid in admitted or (isinstance(decided, Wait) and decided.kind is WaitKind.Reclaiming)
        if taker.group is not None:
            assert victim.group != taker.group.key  # never a running sibling
        if preempted:
            assert victim.queue == taker.queue and victim.priority < taker.priority
        else:
            assert victim.queue != taker.queue and victim.queue in reclaimable
    for e in result.evictions:
        pods = {p.uid: p for p in by_uid[e.job_uid].pods}
        assert all(pods[p].preemptable for p in e.pods)


def test_the_generator_makes_children_beyond_min_available_that_need_victims() -> None:
    # The shape the property is about is drawn: a HyperJob needing fewer children than it has,
    # on clusters that running jobs fill.
    @settings(max_examples=50, deadline=None, database=None, derandomize=True)
    @given(hyperjob_snapshots())
    def shapes(snap: Snapshot) -> None:
        kids = [j for j in snap.pending if j.group is not None]
        full = any(n.free == cpu(0) for c in snap.clusters for n in c.nodes)
        seen.add(any(j.group.min_available < j.group.children for j in kids if j.group) and full)

    seen: set[bool] = set()
    shapes()
    assert True in seen

