"""HyperJobs preempt and reclaim as lone jobs do (admission/hyperjob_victims.py): victims per child
on its cluster, with preempt.py's and reclaim_pods.py's rules, kept only when every child needed
fits, and put back exactly when one does not."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import admitted, job, reason
from vglobal.admission import (
    AdmissionResult,
    Admit,
    ClusterSnap,
    GroupRef,
    NodeSnap,
    PendingJob,
    QueueSnap,
    RunningJob,
    RunningPod,
    Snapshot,
    admit,
)
from vglobal.model.resources import ResourceVector

LOW, HIGH = 1, 100


def cpu(n: float) -> ResourceVector:
    return ResourceVector({"cpu": int(n * 1000)})


def running(
    uid: str,
    queue: str,
    cluster: str,
    nodes: int,
    *,
    priority: int = LOW,
    min_available: int | None = None,
    preemptable: bool = True,
    group: str | None = None,
) -> RunningJob:
    """A job with one pod of 4 cpu on each of the cluster's first ``nodes`` nodes."""
    pods = tuple(
        RunningPod(f"{uid}/1/{uid}-w-{k}/0", f"{cluster}-n{k}", cpu(4), preemptable) for k in range(nodes)
    )
    return RunningJob(
        uid=uid,
        queue=queue,
        cluster=cluster,
        priority=priority,
        created=0.0,
        request=cpu(4 * nodes),
        placements={p.node: p.request for p in pods},
        running_since=0.0,
        pods=pods,
        min_available=nodes if min_available is None else min_available,
        group=group,
    )


def clusters(
    runs: tuple[RunningJob, ...], names: tuple[str, ...] = ("a", "b"), nodes: int = 2
) -> tuple[ClusterSnap, ...]:
    """Clusters of ``nodes`` nodes of 4 cpu, less what the running jobs' pods hold."""
    used = {p.node for r in runs for p in r.pods}
    return tuple(
        ClusterSnap(
            n,
            {},
            tuple(NodeSnap(f"{n}-n{k}", cpu(0 if f"{n}-n{k}" in used else 4), cpu(4)) for k in range(nodes)),
        )
        for n in names
    )


def hyperjob(
    count: int, pods: int = 2, queue: str = "q", minimum: int | None = None, **kw: object
) -> list[PendingJob]:
    out = []
    for i in range(count):
        ref = GroupRef("ns/hj", count if minimum is None else minimum, count, i)
        child = job(f"hj-w-{i}", queue, cpu(4), pods, priority=HIGH, created=10.0, **kw)  # type: ignore[arg-type]
        out.append(replace(child, group=ref))
    return out


def evicted(result: AdmissionResult) -> dict[str, str]:
    """Victim job -> cluster, for pods evicted and jobs stopped whole."""
    out = {e.job_uid: e.cluster for e in result.evictions}
    out.update({r.victim_uid: r.cluster for r in result.reclaims})
    return out


def alloc(runs: tuple[RunningJob, ...], queue: str) -> ResourceVector:
    total = ResourceVector()
    for r in runs:
        if r.queue == queue:
            total = total + r.request
    return total


def test_a_two_child_hyperjob_preempts_lower_priority_jobs_of_its_queue_on_two_clusters() -> None:
    runs = (running("low-a", "q", "a", 2), running("low-b", "q", "b", 2))
    snap = Snapshot(
        100.0, (QueueSnap("q", allocated=alloc(runs, "q")),), clusters(runs), tuple(hyperjob(2)), runs
    )
    result = admit(snap)
    assert sorted(admitted(result).values()) == ["a", "b"]
    assert evicted(result) == {"low-a": "a", "low-b": "b"}
    for uid in ("hj-w-0", "hj-w-1"):
        d = result.decisions[uid]
        assert isinstance(d, Admit) and d.preempting and len(d.nominated) == 2
        victim = f"low-{d.cluster}"
        assert d.preempting.startswith(f"HyperJob ns/hj: child {uid} admitted to {d.cluster} ")
        assert victim in d.preempting and "queue q" in d.preempting
    assert result.queues["q"].allocated == cpu(16)  # the victims' 16 cpu given back, the HyperJob's charged


def test_one_child_without_victims_takes_back_every_victim_of_the_others() -> None:
    # b's job refuses preemption: child 1 fits nowhere, so child 0's victims on a stay untouched.
    runs = (running("low-a", "q", "a", 2), running("pinned-b", "q", "b", 2, preemptable=False))
    queues = (QueueSnap("q", allocated=alloc(runs, "q")),)
    result = admit(Snapshot(100.0, queues, clusters(runs), tuple(hyperjob(2)), runs))
    assert admitted(result) == {}
    assert result.evictions == () and result.reclaims == ()
    text = reason(result, "hj-w-0")
    assert "waits whole (2 children must start together)" in text
    assert "nor do lower-priority pods of its queue" in text
    # What the HyperJob tried is free again within the cycle: a lone job of the queue preempts low-a.
    lone = job("lone", "q", cpu(4), 2, priority=50, created=20.0)
    after = admit(Snapshot(100.0, queues, clusters(runs), (*hyperjob(2), lone), runs))
    assert admitted(after) == {"lone": "a"}
    assert evicted(after) == {"low-a": "a"}
    assert after.queues["q"].allocated == cpu(16)


def test_victims_of_one_child_are_not_counted_again_for_a_sibling_on_the_same_cluster() -> None:
    # One cluster, its two nodes: one free, one held by a low job. Both children may use only a:
    # child 0 takes the free node, child 1 the victim's; a third finds nothing more to preempt.
    runs = (running("low", "q", "a", 1),)
    queues = (QueueSnap("q", allocated=alloc(runs, "q")),)
    snaps = clusters(runs, names=("a",))
    two = hyperjob(2, pods=1, allowed_clusters=frozenset({"a"}))
    result = admit(Snapshot(100.0, queues, snaps, tuple(two), runs))
    assert admitted(result) == {"hj-w-0": "a", "hj-w-1": "a"}
    assert evicted(result) == {"low": "a"}
    three = hyperjob(3, pods=1, allowed_clusters=frozenset({"a"}))
    result = admit(Snapshot(100.0, queues, snaps, tuple(three), runs))
    assert admitted(result) == {} and evicted(result) == {}


def test_a_hyperjob_below_its_deserved_share_reclaims_surplus_pods_of_another_queue() -> None:
    # Queue "big" runs elastic jobs (minAvailable 1 of 2 pods) filling both clusters; q deserves
    # half and runs nothing: its HyperJob takes one surplus pod on each cluster.
    runs = (
        running("big-a", "big", "a", 2, min_available=1),
        running("big-b", "big", "b", 2, min_available=1),
    )
    queues = (
        QueueSnap("q", deserved=cpu(8)),
        QueueSnap("big", deserved=cpu(8), allocated=alloc(runs, "big")),
    )
    result = admit(Snapshot(100.0, queues, clusters(runs), tuple(hyperjob(2, pods=1)), runs))
    assert sorted(admitted(result).values()) == ["a", "b"]
    assert {e.job_uid: len(e.pods) for e in result.evictions} == {"big-a": 1, "big-b": 1}
    assert all(e.reclaimed for e in result.evictions) and result.reclaims == ()
    d = result.decisions["hj-w-0"]
    assert isinstance(d, Admit) and "below its deserved share" in d.reclaiming and d.cluster in d.reclaiming


def test_a_hyperjob_whose_preemption_policy_is_never_waits() -> None:
    runs = (running("low-a", "q", "a", 2), running("low-b", "q", "b", 2))
    kids = tuple(hyperjob(2, preemption_policy="Never"))
    result = admit(Snapshot(100.0, (QueueSnap("q", allocated=alloc(runs, "q")),), clusters(runs), kids, runs))
    assert admitted(result) == {}
    assert result.evictions == () and result.reclaims == ()
    assert "nor do lower-priority pods" not in reason(result, "hj-w-0")  # it never looked for victims


def test_a_running_sibling_is_never_a_victim_of_its_hyperjob() -> None:
    # Child 0 runs on a at a lower priority (its own PriorityClass); child 1, re-queued (both must
    # run), may go only to a: it waits rather than evict its sibling.
    runs = (running("hj-w-0", "q", "a", 2, group="ns/hj"),)
    kid = hyperjob(2, allowed_clusters=frozenset({"a"}))[1]
    result = admit(
        Snapshot(100.0, (QueueSnap("q", allocated=alloc(runs, "q")),), clusters(runs), (kid,), runs)
    )
    assert admitted(result) == {} and evicted(result) == {}
    # A lower-priority job that is no sibling, in the same place, is preempted.
    other = replace(runs[0], uid="other", group=None)
    result = admit(
        Snapshot(100.0, (QueueSnap("q", allocated=alloc(runs, "q")),), clusters(runs), (kid,), (other,))
    )
    assert admitted(result) == {"hj-w-1": "a"} and evicted(result) == {"other": "a"}


def test_a_hyperjob_at_its_queue_limit_preempts_to_give_back_the_excess() -> None:
    # Free room for both children, but q's capability (16 cpu) is taken by a low job on c.
    runs = (running("low-c", "q", "c", 4),)
    snaps = clusters(runs, names=("a", "b", "c"), nodes=4)
    queues = (QueueSnap("q", capability=cpu(16), allocated=alloc(runs, "q")),)
    result = admit(Snapshot(100.0, queues, snaps, tuple(hyperjob(2)), runs))
    assert len(admitted(result)) == 2 and evicted(result) == {"low-c": "c"}
    assert result.queues["q"].allocated == cpu(16)


def test_each_child_takes_surplus_pods_on_its_own_cluster_rather_than_a_whole_job() -> None:
    # One node of 4 cpu per cluster, each full with an elastic low job (4 pods of 1 cpu, 2 needed).
    # The queue is at the clusters' capacity, so each child's victims also give back its own 2 cpu:
    # 2 surplus pods on each cluster, not a whole job on one and a shared cluster for the other.
    def elastic(c: str) -> RunningJob:
        pods = tuple(RunningPod(f"f-{c}/1/f-{c}-w-{k}/0", f"{c}-n0", cpu(1)) for k in range(4))
        return RunningJob(f"f-{c}", "q", c, LOW, 0.0, cpu(4), {f"{c}-n0": cpu(4)}, 0.0, pods, 2)

    runs = (elastic("a"), elastic("b"))
    snaps = tuple(ClusterSnap(c, {}, (NodeSnap(f"{c}-n0", cpu(0), cpu(4)),)) for c in ("a", "b"))
    kids = tuple(replace(k, request=cpu(2), gang=((cpu(1), 2),)) for k in hyperjob(2))
    result = admit(Snapshot(100.0, (QueueSnap("q", allocated=cpu(8)),), snaps, kids, runs))
    assert sorted(admitted(result).values()) == ["a", "b"]
    assert {e.job_uid: len(e.pods) for e in result.evictions} == {"f-a": 2, "f-b": 2}
    assert result.reclaims == ()


def test_runs_not_known_pod_by_pod_are_reclaimed_whole_for_a_hyperjob() -> None:
    # As the simulator reports runs: per node only. Queue "big" is above its deserved share with
    # two such jobs per cluster; q's HyperJob takes one whole job on each cluster.
    def whole(uid: str, c: str, node: int) -> RunningJob:
        return RunningJob(uid, "big", c, LOW, 0.0, cpu(4), {f"{c}-n{node}": cpu(4)}, 0.0)

    runs = tuple(whole(f"big-{c}{k}", c, k) for c in ("a", "b") for k in range(2))
    snaps = tuple(
        ClusterSnap(c, {}, tuple(NodeSnap(f"{c}-n{k}", cpu(0), cpu(4)) for k in range(2))) for c in ("a", "b")
    )
    queues = (QueueSnap("q", deserved=cpu(8)), QueueSnap("big", deserved=cpu(8), allocated=cpu(16)))
    result = admit(Snapshot(100.0, queues, snaps, tuple(hyperjob(2, pods=1)), runs))
    assert sorted(admitted(result).values()) == ["a", "b"]
    stopped = {r.victim_uid: r.cluster for r in result.reclaims}
    assert sorted(stopped.values()) == ["a", "b"] and not any(r.preempted for r in result.reclaims)
    assert result.evictions == ()


def test_a_child_beyond_min_available_takes_victims_as_a_lone_job_would() -> None:
    # minAvailable 1: child 0 takes free cluster a; child 1 follows on b in a low job's place.
    runs = (running("low-b", "q", "b", 2),)
    queues = (QueueSnap("q", allocated=alloc(runs, "q")),)
    snaps = clusters(runs)
    result = admit(Snapshot(100.0, queues, snaps, tuple(hyperjob(2, minimum=1)), runs))
    assert admitted(result) == {"hj-w-0": "a", "hj-w-1": "b"}
    assert evicted(result) == {"low-b": "b"}
    d = result.decisions["hj-w-1"]
    assert isinstance(d, Admit) and "low-b" in d.preempting
    # Once child 0 runs on a (at a lower priority of its own), child 1 never takes its place.
    sibling = (running("hj-w-0", "q", "a", 2, group="ns/hj"),)
    kid = hyperjob(2, minimum=1, allowed_clusters=frozenset({"a"}))[1]
    result = admit(Snapshot(100.0, queues, clusters(sibling), (kid,), sibling))
    assert admitted(result) == {} and evicted(result) == {}
    assert "runs without it" in reason(result, "hj-w-1")


def test_a_child_beyond_min_available_refused_its_victims_waits_and_its_siblings_stay() -> None:
    # minAvailable 1 of 2; q may hold 8 cpu. Child 0 takes free cluster a, which fills q's
    # capability; child 1 could reclaim big's surplus pods on b, but q's limits refuse it.
    runs = (running("big-b", "big", "b", 2, min_available=1),)
    queues = (
        QueueSnap("q", capability=cpu(8), deserved=cpu(16)),
        QueueSnap("big", deserved=cpu(0), allocated=alloc(runs, "big")),
    )
    result = admit(Snapshot(100.0, queues, clusters(runs), tuple(hyperjob(2, minimum=1)), runs))
    assert admitted(result) == {"hj-w-0": "a"}
    assert evicted(result) == {}
    text = reason(result, "hj-w-1")
    assert "runs without it" in text and "limits" in text
    assert result.queues["q"].allocated == cpu(8) and result.queues["big"].allocated == cpu(8)
