"""capacity_test.go Test_capacityPlugin_OnSessionOpenWithHierarchy through the hub and the agent.

The queue tree is the hub's: the agent gets its leaf queues by name only, so the plugin's own tree
there has nothing to check. The Go cases that only assert "does not panic" are left out; queue names
with "_" (which no Kubernetes object name may hold) are spelt with "-".
"""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, check, conf, params

GO = "capacity_test.go Test_capacityPlugin_OnSessionOpenWithHierarchy"
TIERS = conf(
    "enqueue, reclaim, allocate",
    [{"name": "capacity", "enableHierarchy": True}, {"name": "predicates"}, {"name": "gang"}],
)
NO = {"volcano.sh/preemptable": "false"}
GPU, A100 = "nvidia.com/gpu", "nvidia.com/a100"
N1 = Node("n1", "8", "8Gi", pods=11)
N2 = Node("n2", "8", "8Gi", pods=10, extra={GPU: "8", "hugepages-1Gi": "0"})


def res(cpu: str = "", memory: str = "", **scalars: str) -> dict[str, str]:
    out = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {**out, **{k.replace("__", "."): v for k, v in scalars.items()}}


def q(
    name: str, parent: str, deserved: dict[str, str] | None = None, capability: dict[str, str] | None = None
) -> Queue:
    return Queue(name, parent=parent, deserved=deserved, capability=capability)


def pg(name: str, queue: str, min_member: int = 1, phase: str = "Inqueue") -> Group:
    return Group(name, namespace="ns1", queue=queue, min_member=min_member, phase=phase)


def pod(name: str, group: str, cpu: str, memory: str, node: str | None = None, **kw: object) -> Pod:
    return Pod(f"ns1/{name}", group, cpu=cpu, memory=memory, node=node, **kw)  # type: ignore[arg-type]


def _case(name: str, **kw: object) -> Case:
    kw.setdefault("conf", TIERS)
    return Case(GO, name, **kw)  # type: ignore[arg-type]


TREE1 = [
    q("q1", "root", capability=res("4", "4Gi")),
    q("q2", "root", capability=res("4", "4Gi")),
    q("q11", "q1", capability=res("1", "1Gi")),
    q("q12", "q1", capability=res("3", "3Gi")),
]
Q3 = q("q3", "root", res("4", "4Gi", pods="10"), res("4", "4Gi", pods="10"))
Q4 = q("q4", "root", res("2", "2Gi", pods="1"), res("4", "4Gi", pods="4"))
Q31 = q("q31", "q3", res("2", "2Gi", pods="2"), res("4", "4Gi", pods="4"))
Q32 = q("q32", "q3", res("2", "2Gi", pods="2"), res("4", "4Gi", pods="4"))
Q33 = q("q33", "q3", res("0", "0", pods="2"), res("4", "4Gi", pods="4"))

CASES = [
    _case(
        "case0: Pod allocatable when queue is leaf queue",
        nodes=[N1],
        groups=[pg("pg1", "q11")],
        pods=[pod("p1", "pg1", "1", "1Gi")],
        queues=TREE1,
        binds={"ns1/p1": "n1"},
    ),
    _case(
        "case1: Pod not allocatable when queue is not leaf queue",
        nodes=[N1],
        groups=[pg("pg2", "q1", phase="Pending")],
        pods=[pod("p2", "pg2", "1", "1Gi")],
        queues=TREE1,
        binds={},
        waiting=["pg2"],
    ),
    _case(
        "case2: Pod allocatable when queue has not exceed capability",
        nodes=[N1],
        groups=[pg("pg3", "q31", min_member=2)],
        pods=[pod("p3", "pg3", "2", "2Gi"), pod("p4", "pg3", "2", "2Gi")],
        queues=[Q3, Q4, Q31, Q32],
        binds={"ns1/p3": "n1", "ns1/p4": "n1"},
    ),
    _case(
        "case3: Can reclaim from other queues when allocated < deserved",
        nodes=[N1],
        groups=[pg("pg4", "q4", phase="Running"), pg("pg5", "q31", phase="Running"), pg("pg6", "q32")],
        pods=[
            pod("p5", "pg4", "4", "4Gi", "n1"),
            pod("p6", "pg5", "2", "2Gi", "n1", labels=NO),
            pod("p7", "pg5", "2", "2Gi", "n1"),
            pod("p8", "pg6", "2", "2Gi"),
        ],
        queues=[Q3, Q31, Q32, Q4],
        evicted=["ns1/p7"],
        binds={"ns1/p8": "n1"},
        differs="the hub reclaims and admits the reclaimer where the victim frees room: the agent binds it",
    ),
    _case(
        "case4: Pod is not allocatable when ancestor queue's real capability not enough",
        nodes=[N1],
        groups=[pg("pg5", "q31", phase="Running"), pg("pg7", "q32", phase="Running"), pg("pg8", "q33")],
        pods=[
            pod("p6", "pg5", "2", "2Gi", "n1", labels=NO),
            pod("p9", "pg7", "2", "2Gi", "n1"),
            pod("p10", "pg8", "3", "3Gi"),
        ],
        queues=[Q3, Q31, Q32, Q33],
        binds={},
        waiting=["pg8"],
    ),
    _case(
        "case5: If the capability cpu or memory is not specified, the value should be inherited from parent queue",
        nodes=[N1],
        groups=[pg("pg9", "q51", phase="Running")],
        pods=[pod("p11", "pg9", "1", "0")],
        queues=[q("q5", "root", capability=res(memory="4Gi")), q("q51", "q5", capability=res(memory="2Gi"))],
        binds={"ns1/p11": "n1"},
    ),
    _case(
        # Volcano's PodGroups have minResources and no pods; here each job has one pod of that size,
        # and the hub's admission plays enqueue: Inqueue is admitted, Pending waits.
        "case6: podgroup can't be enqueued when any ancestor queue's capability is not enough",
        nodes=[N1],
        groups=[pg("pg10", "q61", phase="Pending"), pg("pg11", "q62", phase="Pending")],
        pods=[pod("p10", "pg10", "2", "4Gi"), pod("p11", "pg11", "2", "4Gi")],
        queues=[q("q6", "root", capability=res("2", "4Gi")), q("q61", "q6"), q("q62", "q6")],
        waiting=["pg11"],
    ),
    _case(
        "case8: When the queue's deserved value has a scalar resource set, the check can pass",
        nodes=[Node("n-gpu", "8", "8Gi", pods=10, extra={GPU: "8"})],
        groups=[pg("pg12", "q81")],
        pods=[pod("p12", "pg12", "2", "2Gi", extra={GPU: "1"})],
        queues=[
            q("q8", "root", res("4", "4Gi", **{GPU: "8"})),
            q("q81", "q8", res("2", "2Gi", **{GPU: "4"})),
            q("q82", "q8", res("2", "2Gi", **{GPU: "4"})),
        ],
        binds={"ns1/p12": "n-gpu"},
    ),
    _case(
        "case9: When some scalar resources are 0 in deserved, the check can still pass",
        nodes=[N2],
        groups=[pg("pg13", "q91")],
        pods=[pod("p13", "pg13", "2", "2Gi", extra={GPU: "1"})],
        queues=[
            q("q9", "root", res("2", "2Gi", **{GPU: "8", "hugepages-1Gi": "0"})),
            q("q91", "q9", res("2", "2Gi", **{GPU: "4", "hugepages-1Gi": "0"})),
        ],
        binds={"ns1/p13": "n2"},
    ),
    _case(
        "case11: If the capability scalar resources is not specified, the value should be inherited from parent queue",
        nodes=[N2],
        groups=[pg("pg14", "case11-queue11"), pg("pg15", "case11-queue12")],
        pods=[
            pod("p14", "pg14", "1", "1Gi", extra={GPU: "4"}),
            pod("p15", "pg15", "1", "1Gi", extra={GPU: "4"}),
        ],
        queues=[
            q("case11-queue1", "root"),
            q("case11-queue11", "case11-queue1", capability=res("4", "4Gi", **{GPU: "4"})),
            q("case11-queue12", "case11-queue1", capability=res("4", "4Gi", **{GPU: "4"})),
        ],
        binds={"ns1/p14": "n2", "ns1/p15": "n2"},
    ),
    _case(
        "case12: Can reclaim from other queues when allocated <= deserved on a single scalar dimension",
        nodes=[Node("n3", "16", "16Gi", pods=11, extra={A100: "5", "rdma/hca": "1001"})],
        groups=[
            pg("pg16", "case12-queue11"),
            pg("pg17", "case12-queue12", phase="Running"),
            pg("pg18", "case12-queue12", phase="Running"),
        ],
        pods=[
            pod("p16", "pg16", "1", "1Gi", extra={A100: "2", "rdma/hca": "1"}),
            pod("p17", "pg17", "1", "1Gi", "n3", extra={A100: "2", "rdma/hca": "1"}),
            pod("p18", "pg18", "1", "1Gi", "n3", labels=NO, extra={A100: "2", "rdma/hca": "1"}),
        ],
        queues=[
            q("case12-queue1", "root", {A100: "2"}),
            q("case12-queue11", "case12-queue1", {A100: "2"}),
            q("case12-queue12", "case12-queue1"),
        ],
        evicted=["ns1/p17"],
        binds={"ns1/p16": "n3"},
        differs="the hub reclaims and admits the reclaimer where the victim frees room: the agent binds it",
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_capacity_hierarchy(case: Case) -> None:
    check(case)
