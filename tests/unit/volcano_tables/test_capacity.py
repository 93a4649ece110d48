"""capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy through the hub and the agent."""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

GO = "capacity_test.go Test_capacityPlugin_OnSessionOpenWithoutHierarchy"
TIERS = conf("allocate, reclaim", ["capacity", "predicates", "gang"])
NO = {"volcano.sh/preemptable": "false"}
WORKER = {"selector": "worker"}
GPU, A100 = "nvidia.com/gpu", "nvidia.com/A100"
# The hub reclaims and admits the reclaimer where its victims free room: the agent then binds it
# where Volcano's single session pipelines it onto the resources being released.
BOUND_NOT_PIPELINED = (
    "reclaim is the hub's: it stops the victim job and admits the reclaimer in the next cycle, so "
    "the agent binds the task that Volcano pipelines"
)


def res(cpu: str, memory: str, **scalars: str) -> dict[str, str]:
    out = {"cpu": cpu, "memory": memory} if cpu or memory else {}
    return {**out, **{k.replace("_", "/"): v for k, v in scalars.items()}}


def pg(name: str, queue: str, phase: str = "Inqueue") -> Group:
    return Group(name, namespace="ns1", queue=queue, min_member=1, phase=phase)


def pod(name: str, group: str, cpu: str, memory: str, node: str | None = None, **kw: object) -> Pod:
    return Pod(f"ns1/{name}", group, cpu=cpu, memory=memory, node=node, **kw)  # type: ignore[arg-type]


def q(
    name: str, deserved: dict[str, str] | None = None, capability: dict[str, str] | None = None, **kw: object
) -> Queue:
    return Queue(name, deserved=deserved, capability=capability, **kw)  # type: ignore[arg-type]


def _case(name: str, go: str = GO, **kw: object) -> Case:
    kw.setdefault("conf", TIERS)
    return Case(go, name, **kw)  # type: ignore[arg-type]


N1 = Node("n1", "2", "4Gi", pods=10, labels=WORKER)
N2 = Node("n2", "2", "4Gi", pods=10)
N8 = Node("n8", "4", "8Gi", pods=10, extra={GPU: "1"})

CASES = [
    _case(
        "case0: Pod allocatable when queue has not exceed capability",
        nodes=[N1, N2],
        groups=[pg("pg1", "q1", "Running"), pg("pg2", "q1")],
        pods=[pod("p1", "pg1", "1", "1Gi", "n1"), pod("p2", "pg2", "1", "1Gi", selector=WORKER)],
        queues=[q("q1", capability=res("2", "2Gi"))],
        binds={"ns1/p2": "n1"},
    ),
    _case(
        "case1: Pod not allocatable when queue exceed queue capability",
        nodes=[N1, N2],
        groups=[pg("pg3", "q2", "Running"), pg("pg4", "q2")],
        pods=[pod("p3", "pg3", "1", "1Gi", "n1"), pod("p4", "pg4", "1", "1Gi")],
        queues=[q("q2", capability=res("1.5", "1.5Gi"))],
        binds={},
        waiting=["pg4"],
    ),
    _case(
        "case2: Can reclaim from other queues when allocated < deserved",
        nodes=[N1, N2],
        groups=[pg("pg5", "q3", "Running"), pg("pg6", "q4")],
        pods=[
            pod("p5", "pg5", "2", "4Gi", "n1", labels=NO),
            pod("p6", "pg5", "2", "4Gi", "n2"),
            pod("p7", "pg6", "2", "4Gi"),
        ],
        queues=[q("q3", res("2", "4Gi")), q("q4", res("2", "4Gi"))],
        evicted=["ns1/p6"],
        binds={"ns1/p7": "n2"},
        differs=BOUND_NOT_PIPELINED,
    ),
    _case(
        "case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod has "
        "not request CPU & Memory, reclaim should happen",
        nodes=[
            Node("n3", "2", "4Gi", pods=10, labels=WORKER, extra={A100: "10"}),
            Node("n4", "2", "4Gi", pods=10, extra={A100: "10"}),
        ],
        groups=[pg("pg7", "q5", "Running"), pg("pg8", "q6", "Running"), pg("pg9", "q6")],
        pods=[
            pod("p8", "pg7", "0", "0", "n3", labels=NO, extra={A100: "10"}),
            pod("p9", "pg7", "0", "0", "n4", extra={A100: "10"}),
            pod("p10", "pg8", "2", "4Gi", "n3"),
            pod("p11", "pg8", "2", "4Gi", "n4"),
            pod("p12", "pg9", "0", "0", extra={A100: "10"}),
        ],
        queues=[q("q5", res("2", "4Gi", **{A100: "10"})), q("q6", res("2", "4Gi", **{A100: "10"}))],
        evicted=["ns1/p9"],
        binds={"ns1/p12": "n4"},
        differs=BOUND_NOT_PIPELINED,
    ),
    _case(
        "case4: Pods are assigned according to the order of Queue Priority in which PGs are placed",
        nodes=[Node("n5", "2", "4Gi", pods=10), Node("n6", "2", "4Gi", pods=10)],
        groups=[pg("pg10", "q7", "Running"), pg("pg11", "q8"), pg("pg12", "q9")],
        pods=[
            pod("p13", "pg10", "2", "4Gi", "n5"),
            pod("p14", "pg11", "2", "4Gi"),
            pod("p15", "pg12", "2", "4Gi"),
        ],
        queues=[
            q("q7", capability=res("2", "4Gi"), priority=5),
            q("q8", capability=res("2", "4Gi"), priority=1),
            q("q9", capability=res("2", "4Gi"), priority=10),
        ],
        binds={"ns1/p15": "n6"},
        waiting=["pg11"],
    ),
    _case(
        "case5: Can reclaim from other queues when allocated + req <= deserved on one dimension",
        nodes=[N1],
        groups=[pg("pg16", "q10", "Running"), pg("pg17", "q10"), pg("pg18", "q11", "Running")],
        pods=[
            pod("p16", "pg16", "1", "3Gi", "n1"),
            pod("p17", "pg17", "1", "1Gi"),
            pod("p18", "pg18", "1", "1Gi", "n1"),
        ],
        queues=[
            q("q10", res("2", "2Gi"), res("4", "4Gi")),
            q("q11", res("0", "0"), res("2", "2Gi")),
        ],
        evicted=["ns1/p18"],
        binds={"ns1/p17": "n1"},
        differs=BOUND_NOT_PIPELINED,
    ),
    _case(
        "case6: Can not reclaim from other queues when allocated + req > deserved",
        nodes=[N1],
        groups=[pg("pg19", "q12", "Running"), pg("pg20", "q12"), pg("pg21", "q13", "Running")],
        pods=[
            pod("p19", "pg19", "1", "1Gi", "n1"),
            pod("p20", "pg20", "1", "2Gi"),
            pod("p21", "pg21", "1", "1Gi", "n1"),
        ],
        queues=[
            q("q12", res("1", "2Gi"), res("4", "4Gi")),
            q("q13", res("0", "0"), res("2", "2Gi")),
        ],
        evicted=[],
        pipelined={},
    ),
    _case(
        "case7: allocated does not contain scalar dimension (GPU), deserved does; should not reclaim",
        nodes=[Node("n7", "4", "8Gi", pods=10, extra={GPU: "4"})],
        groups=[
            pg("pg22", "queue14", "Running"),
            pg("pg23", "queue15", "Running"),
            pg("pg24", "queue16", "Running"),
            pg("pg25", "queue16"),
        ],
        pods=[
            pod("p22", "pg22", "2", "4Gi", "n7"),
            pod("p23", "pg23", "0", "0", "n7", extra={GPU: "1"}),
            pod("p24", "pg24", "2", "1Gi", "n7", extra={GPU: "1"}),
            pod("p25", "pg25", "2", "3Gi", extra={GPU: "1"}),
        ],
        queues=[
            q("queue14", res("2", "4Gi", **{GPU: "2"})),
            q("queue15"),
            q("queue16", res("2", "4Gi", **{GPU: "2"})),
        ],
        evicted=[],
        pipelined={},
    ),
    _case(
        "case8: reclaimer dimensions are considered properly while evicting reclaimees",
        nodes=[N8],
        groups=[
            pg("pg26", "queue17", "Running"),
            pg("pg27", "queue17", "Running"),
            pg("pg28", "queue17", "Running"),
            pg("pg29", "queue18", "Running"),
            pg("pg30", "queue18"),
        ],
        pods=[
            pod("p26", "pg26", "0", "4Gi", "n8"),
            pod("p27", "pg27", "1", "0", "n8"),
            pod("p28", "pg28", "0", "0", "n8", extra={GPU: "1"}),
            pod("p29", "pg29", "2", "4Gi", "n8"),
            pod("p30", "pg30", "1", "0", extra={GPU: "1"}),
        ],
        queues=[q("queue17", res("2", "2Gi")), q("queue18", res("2", "4Gi", **{GPU: "1"}))],
        evicted=["ns1/p28"],
        binds={"ns1/p30": "n8"},
        differs=BOUND_NOT_PIPELINED,
    ),
    _case(
        "case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed on cpu/memory",
        nodes=[N8],
        groups=[pg("pg31", "queue19", "Running"), pg("pg32", "queue20")],
        pods=[pod("p31", "pg31", "4", "4Gi", "n8", extra={GPU: "1"}), pod("p32", "pg32", "1", "1Gi")],
        queues=[q("queue19", {GPU: "1"}), q("queue20", res("2", "2Gi"))],
        evicted=[],
        pipelined={},
    ),
    _case(
        "case10: PreemptiveFn respects capability — no reclaim when futureUsed would exceed capability",
        nodes=[Node("n9", "8", "100Gi", pods=10), Node("n10", "8", "100Gi", pods=10)],
        groups=[pg("pg33", "queue21", "Running"), pg("pg34", "queue21"), pg("pg35", "queue22", "Running")],
        pods=[
            pod("p33", "pg33", "7", "90Gi", "n9"),
            pod("p34", "pg34", "2", "5Gi"),
            pod("p35", "pg35", "2", "5Gi", "n10"),
        ],
        queues=[q("queue21", res("8", "100Gi"), res("8", "100Gi")), q("queue22", None, res("2", "5Gi"))],
        evicted=[],
        pipelined={},
        waiting=["pg34"],
    ),
]

ENQUEUE = "capacity_test.go TestEnqueueAndAllocatable"
ENQUEUE_TIERS = conf("enqueue, allocate", ["capacity"])
E_NODES = [Node("n1", "3", "3G", pods=10), Node("n2", "3", "3G", pods=10)]
E_QUEUES = [q("q1", res("2", "2G"), res("2", "2G")), q("q2", res("2", "2G"), res("3", "3G"))]
E_RUNNING = [pod("pod1", "pg1", "1", "3G", "n1"), pod("pod2", "pg2", "3", "1G", "n2")]
E_GROUPS = [pg("pg1", "q1", "Running"), pg("pg2", "q2", "Running")]

CASES += [
    _case(
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
        go=ENQUEUE,
        nodes=E_NODES,
        groups=[*E_GROUPS, pg("pg3", "q1", "Pending")],
        pods=[*E_RUNNING, pod("pod3", "pg3", "1", "0")],
        queues=E_QUEUES,
        conf=ENQUEUE_TIERS,
        binds={"ns1/pod3": "n1"},
    ),
    _case(
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
        go=ENQUEUE,
        nodes=E_NODES,
        groups=[*E_GROUPS, pg("pg4", "q2", "Pending")],
        pods=[*E_RUNNING, pod("pod4", "pg4", "0", "1G")],
        queues=E_QUEUES,
        conf=ENQUEUE_TIERS,
        binds={"ns1/pod4": "n2"},
    ),
    _case(
        "case2: exceed capacity, can not enqueue",
        go=ENQUEUE,
        nodes=E_NODES,
        groups=[*E_GROUPS, pg("pg5", "q1", "Pending")],
        pods=[*E_RUNNING, pod("pod5", "pg5", "1", "1G")],
        queues=E_QUEUES,
        conf=ENQUEUE_TIERS,
        binds={},
        waiting=["pg5"],
    ),
    _case(
        "case4: queue with non-open state, can not enqueue",
        go=ENQUEUE,
        nodes=E_NODES,
        groups=[pg("pg6", "q3", "Pending")],
        pods=[pod("pod6", "pg6", "1", "1G")],
        queues=[Queue("q3", capability={"cpu": "3", "memory": "3G"}, state="Closed")],
        conf=ENQUEUE_TIERS,
        binds={},
        waiting=["pg6"],
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_capacity(case: Case) -> None:
    check(case)
