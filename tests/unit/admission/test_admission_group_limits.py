"""volcano.sh/nodegroup-resource-limits at the hub: a queue's gangs are placed so that what it holds
in each node group (its running pods there plus this cycle's admissions) stays within the limit on
the resources named; a gang that would pass it goes to other groups its affinity allows, or waits
saying why."""

from __future__ import annotations

from tests.unit.admission.builders import admitted, job, reason
from vglobal.admission import ClusterSnap, NodeSnap, QueueSnap, RunningJob, Snapshot, admit
from vglobal.model.queue_affinity import NODE_GROUP_LABEL, QueueAffinity
from vglobal.model.resources import ResourceVector


def cpu(n: float) -> ResourceVector:
    return ResourceVector({"cpu": int(n * 1000), "memory": int(n * 2**30)})


BOTH = QueueAffinity(required=("g1", "g2"), preferred=("g1",))
# g1 before g2 in name order: the plain fit would fill g1 first
CLUSTER = ClusterSnap(
    "c",
    {},
    tuple(
        NodeSnap(n, cpu(16), cpu(16), {NODE_GROUP_LABEL: g})
        for n, g in (("a1", "g1"), ("a2", "g1"), ("b1", "g2"), ("b2", "g2"))
    ),
)


def _queue(limit_cpu: float) -> QueueSnap:
    return QueueSnap(
        "q", affinity=BOTH, node_group_limits={"g1": ResourceVector({"cpu": int(limit_cpu * 1000)})}
    )


def test_gangs_fill_a_group_up_to_its_limit_then_go_to_the_next() -> None:
    # Only g1 allowed, 6 cpu: the first gang (4 x 1 cpu) goes, the second (4 x 1) no longer fits
    # the 2 left though g1's nodes have 28 cpu free, a third of 2 x 1 still does.
    only_g1 = QueueSnap(
        "q", affinity=QueueAffinity(required=("g1",)), node_group_limits=_queue(6).node_group_limits
    )
    pending = (
        job("j0", "q", cpu(1), pods=4),
        job("j1", "q", cpu(1), pods=4, created=1),
        job("j2", "q", cpu(1), pods=2, created=2),
    )
    got = admit(Snapshot(0, (only_g1,), (CLUSTER,), pending))
    assert admitted(got) == {"j0": "c", "j2": "c"}
    assert "queue q limits what it holds in node groups g1" in reason(got, "j1")
    # With g2 allowed too: 2 pods of 8 cpu never fit g1's 6, so they go to g2, which holds four
    # such pods: two gangs, the third waits (without the limit, g1's nodes would take it).
    more = tuple(job(f"k{k}", "q", cpu(8), pods=2, created=k) for k in range(3))
    got = admit(Snapshot(0, (_queue(6),), (CLUSTER,), more))
    assert admitted(got) == {"k0": "c", "k1": "c"}
    assert "queue q limits what it holds in node groups g1" in reason(got, "k2")
    unlimited = QueueSnap("q", affinity=BOTH)
    assert admitted(admit(Snapshot(0, (unlimited,), (CLUSTER,), more))) == {"k0": "c", "k1": "c", "k2": "c"}


def test_running_pods_count_against_the_limit() -> None:
    running = RunningJob(
        uid="r", queue="q", cluster="c", priority=0, created=0, request=cpu(5), placements={"a1": cpu(5)}
    )
    only_g1 = QueueSnap(
        "q", affinity=QueueAffinity(required=("g1",)), node_group_limits=_queue(6).node_group_limits
    )
    pending = (job("j", "q", cpu(1), pods=2),)
    got = admit(Snapshot(0, (only_g1,), (CLUSTER,), pending, (running,)))
    assert admitted(got) == {}  # 5 held + 2 > 6, though a1 and a2 have room
    assert "limits what it holds in node groups g1" in reason(got, "j")
    got = admit(Snapshot(0, (only_g1,), (CLUSTER,), (job("one", "q", cpu(1)),), (running,)))
    assert admitted(got) == {"one": "c"}
