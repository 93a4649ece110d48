"""nodegroup_test.go (TestNodeGroup, TestNodeGroupResourceLimits, TestNodeGroupResourceLimitAllocationEvent):
Volcano's nodegroup plugin cases through the hub and the agent.

Each Go case checks the plugin's predicate status and score per node for one pending pod. Here every
case runs twice: the agent's nodegroup plugin, in a session over the queues as a Dispatch carries
them, gives exactly the Go table's statuses and scores; and the whole path (the hub's admit(), then
the agent's allocate with the same plugin options) binds the pod on the best node that passes, or
the hub keeps it waiting, saying why, when no node does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest

from tests.unit.volcano_tables.harness import (
    Case,
    Group,
    Node,
    Pod,
    Queue,
    _Federation,
    check,
    conf,
    params,
)
from vglobal.agent.snapshot import cluster_snapshot
from vglobal.model.errors import ManifestError
from vglobal.model.queue import parse_queue
from vglobal.scheduler import ACTIONS, PLUGINS, QueueSpec
from vglobal.scheduler.selection import score_nodes
from vglobal.scheduler.session import Session

GO = "nodegroup_test.go TestNodeGroup"
GROUP = "volcano.sh/nodegroup-name"
LIMITS = "volcano.sh/nodegroup-resource-limits"
REQ, PREF = (
    "requiredDuringSchedulingIgnoredDuringExecution",
    "preferredDuringSchedulingIgnoredDuringExecution",
)
OK, NO = "Success", "UnschedulableAndUnresolvable"


def affinity(
    req: list[str], pref: list[str], anti_req: tuple[str, ...] = (), anti_pref: tuple[str, ...] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if req or pref:
        out["nodeGroupAffinity"] = {REQ: req, PREF: pref}
    if anti_req or anti_pref:
        out["nodeGroupAntiAffinity"] = {REQ: list(anti_req), PREF: list(anti_pref)}
    return out


NODES = [
    Node("n1", "2", "4Gi", labels={GROUP: "group1"}),
    Node("n2", "4", "16Gi", labels={GROUP: "group2"}),
    Node("n3", "4", "16Gi", labels={GROUP: "group3"}),
    Node("n4", "4", "16Gi", labels={GROUP: "group4"}),
    Node("n5", "4", "16Gi"),
]
Q1 = affinity(["group1", "group3"], ["group3"], ("group2", "group4"), ("group4",))
Q2 = affinity(["group1"], ["group3"], ("group2",), ("group4",))


def nodegroup_conf(hierarchy: bool = False, **arguments: Any) -> str:
    plugin: dict[str, Any] = {"name": "nodegroup", "enableNodeOrder": True, "enablePredicate": True}
    if hierarchy:
        plugin["enableHierarchy"] = True
    if arguments:
        plugin["arguments"] = arguments
    return conf("allocate", [plugin])


@dataclass
class Table:
    """One Go case: the plugin's verdict per node for the pending pod, and the whole path's."""

    case: Case
    pod: str  # the pending pod the Go test asks about
    status: Mapping[str, str]  # node -> Success / UnschedulableAndUnresolvable
    scores: Mapping[str, float] = field(default_factory=dict)  # node -> score (TestNodeGroup only)


def _table(
    name: str,
    queues: list[Queue],
    queue: str,
    status: str,
    scores: list[float] | None = None,
    *,
    conf_text: str | None = None,
    differs: str = "",
    node: str | None = None,
) -> Table:
    """A TestNodeGroup case: one 2-cpu pod of PodGroup pg in ``queue``; ``status`` per node n1..n5
    as "+" (Success) or "-"; the pod binds on ``node`` (else the hub keeps pg waiting)."""
    case = Case(
        GO,
        name,
        nodes=NODES,
        groups=[Group("pg", queue=queue)],
        pods=[Pod("c1/p", "pg", cpu="2", memory="4Gi")],
        queues=queues,
        conf=conf_text or nodegroup_conf(),
        binds={"c1/p": node} if node else {},
        waiting=[] if node else ["pg"],
        differs=differs,
    )
    verdict = {f"n{i + 1}": OK if c == "+" else NO for i, c in enumerate(status)}
    return Table(case, "c1/p", verdict, {f"n{i + 1}": s for i, s in enumerate(scores or [])})


ROOT_DIFFERS = (
    "vglobal's root queue is built in and carries no spec, so the affinity Volcano's test writes on "
    "root is on a top-level queue above the ones the case names"
)
TABLES = [
    _table(
        "case: soft constraints is subset of hard constraints",
        [Queue("q1", affinity=Q1)],
        "q1",
        "+-++-",
        [100, 0, 150, -1, 0],
        node="n3",
    ),
    _table(
        "case: soft constraints is not subset of hard constraints",
        [Queue("q2", affinity=Q2)],
        "q2",
        "+-++-",
        [100, 0, 50, -1, 0],
        node="n1",
    ),
    _table(
        "case: affinity is not set for the queue, pods still cannot be scheduled to nodes with the "
        "nodegroup label when strict=false",
        [Queue("root-no-affinity")],
        "root-no-affinity",
        "----+",
        [0, 0, 0, 0, 0],
        conf_text=nodegroup_conf(strict=False),
        node="n5",
    ),
    _table(
        "case: affinity inherits from parent queue",
        [Queue("top", affinity=Q1), Queue("q1", parent="top", affinity=Q1), Queue("q1-child", parent="q1")],
        "q1-child",
        "+-++-",
        [100, 0, 150, -1, 0],
        conf_text=nodegroup_conf(hierarchy=True),
        differs=ROOT_DIFFERS,
        node="n3",
    ),
    _table(
        "case: affinity inherits from ancestor queue if parent queue has no affinity",
        [
            Queue("top", affinity=Q1),
            Queue("q-no-affinity", parent="top"),
            Queue("q-no-affinity-child", parent="q-no-affinity"),
        ],
        "q-no-affinity-child",
        "+-++-",
        [100, 0, 150, -1, 0],
        conf_text=nodegroup_conf(hierarchy=True),
        differs=ROOT_DIFFERS,
        node="n3",
    ),
    _table(
        "case: queue without affinity", [Queue("q-no-affinity")], "q-no-affinity", "-----", [0, 0, 0, 0, 0]
    ),
    _table(
        "case: preferred nodegroup priority ordering",
        [Queue("q3", affinity=affinity([], ["group1", "group3"]))],
        "q3",
        "+-+--",
        [50, 0, 25, 0, 0],
        conf_text=nodegroup_conf(enablePreferredOrder=True),
        node="n1",
    ),
]

LIMITS_GO = "nodegroup_test.go TestNodeGroupResourceLimits"
BIG = [
    Node("n1", "16", "64Gi", pods=32, labels={GROUP: "group1"}),
    Node("n2", "16", "64Gi", pods=32, labels={GROUP: "group2"}),
]
BOTH = affinity(["group1", "group2"], ["group1"])


def _limits(name: str, queue: str, limit: str | None, status: str, *, used: bool = False) -> Table:
    """A TestNodeGroupResourceLimits case: pod limit/pending (2 cpu, 4Gi) in ``queue``, whose
    annotation is ``limit``; with ``used`` a pod of the same queue already runs on n1."""
    groups = [Group("pg-pending", namespace="limit", queue=queue)]
    pods = [Pod("limit/pending", "pg-pending", cpu="2", memory="4Gi")]
    if used:
        groups.insert(0, Group("pg-used", namespace="limit", queue=queue, phase="Running"))
        pods.insert(0, Pod("limit/used", "pg-used", cpu="2", memory="4Gi", node="n1"))
    annotations = {LIMITS: limit} if limit is not None else {}
    best = "n1" if status[0] == "+" else "n2"  # n1's group is also preferred: it scores 150, n2 100
    case = Case(
        LIMITS_GO,
        name,
        nodes=BIG,
        groups=groups,
        pods=pods,
        queues=[Queue(queue, affinity=BOTH, annotations=annotations)],
        conf=nodegroup_conf(),
        binds={"limit/pending": best},
        waiting=[],
    )
    return Table(
        case, "limit/pending", {"n1": OK if status[0] == "+" else NO, "n2": OK if status[1] == "+" else NO}
    )


LIMIT_TABLES = [
    _limits("no annotation keeps existing behavior", "q-no-limit", None, "++"),
    _limits(
        "under nodegroup limit permits preferred nodegroup",
        "q-under-limit",
        '{"group1":{"cpu":"3","memory":"8Gi"}}',
        "++",
    ),
    _limits("omitted resource dimension is unlimited", "q-cpu-only-limit", '{"group1":{"cpu":"3"}}', "++"),
    _limits(
        "specified resource dimension is enforced", "q-cpu-only-over-limit", '{"group1":{"cpu":"1"}}', "-+"
    ),
    _limits(
        "over nodegroup limit rejects preferred nodegroup and permits fallback",
        "q-over-limit",
        '{"group1":{"cpu":"3","memory":"8Gi"}}',
        "-+",
        used=True,
    ),
]


def _session(
    case: Case, change: Callable[[QueueSpec], QueueSpec] | None = None
) -> tuple[Session, _Federation]:
    """The agent's session over the case's pods, every PodGroup's run with its queue chain
    (``change``d, to give the agent what the hub would not send)."""
    fed = _Federation(case)
    for m in fed.members.values():
        if m.run is None:
            m.run = fed._run(m)
        if change is not None:
            m.run.queues = tuple(change(q) for q in m.run.queues)
    ssn = Session(
        cluster_snapshot(fed.nodes, fed.runs(), fed.hyper), fed.conf, actions=ACTIONS, plugins=PLUGINS
    )
    ssn.open()
    return ssn, fed


def _verdict(ssn: Session, ref: str) -> tuple[dict[str, str], dict[str, float]]:
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.uid == ref)
    passed = [all(bool(f.passed[r]) for f in ssn.predicate_filters(task)) for r in range(len(ssn.nodes))]
    rows = np.arange(len(ssn.nodes))
    scores = score_nodes(ssn, task, rows).tolist()
    names = ssn.nodes.names
    return {names[r]: OK if ok else NO for r, ok in enumerate(passed)}, dict(zip(names, scores, strict=True))


@pytest.mark.parametrize("table", [pytest.param(t, id=t.case.id) for t in TABLES + LIMIT_TABLES])
def test_the_agents_plugin_gives_the_go_tables_verdict(table: Table) -> None:
    ssn, _ = _session(table.case)
    status, scores = _verdict(ssn, table.pod)
    assert status == dict(table.status)
    if table.scores:
        assert scores == pytest.approx(dict(table.scores))


@pytest.mark.parametrize("case", params([t.case for t in TABLES + LIMIT_TABLES]))
def test_through_the_hub_and_the_agent(case: Case) -> None:
    out = check(case)
    if case.waiting:  # the hub names the groups, or says the queue names none
        assert "node group" in out.waiting["pg"], out.waiting


def test_invalid_annotation_rejects_queue_tasks() -> None:
    """TestNodeGroupResourceLimits "invalid annotation rejects queue tasks". Volcano accepts the
    Queue and its plugin then fails every node for the queue's tasks. The hub refuses such a Queue
    with an error naming the annotation, so nothing is stored; an agent given one anyway fails every
    node, as Volcano's plugin does."""
    text = '{"group1":{"cpu":'
    bad = Queue("q-invalid-limit", affinity=BOTH, annotations={LIMITS: text})
    with pytest.raises(
        ManifestError, match=r'metadata\.annotations\["volcano\.sh/nodegroup-resource-limits"\]'
    ):
        parse_queue(bad.manifest())
    good = Queue("q-invalid-limit", affinity=BOTH)
    case = Case(
        LIMITS_GO,
        "invalid annotation rejects queue tasks",
        BIG,
        [Group("pg", queue=good.name)],
        [Pod("c1/p", "pg", cpu="2", memory="4Gi")],
        [good],
        nodegroup_conf(),
    )
    ssn, _ = _session(case, lambda q: replace(q, annotations={LIMITS: text}))
    assert _verdict(ssn, "c1/p")[0] == {"n1": NO, "n2": NO}


def test_allocation_event_updates_nodegroup_usage() -> None:
    """TestNodeGroupResourceLimitAllocationEvent: once the first pod is allocated in group1, the
    second would pass the group's limit. The agent's plugin counts the allocation as Volcano's
    event handler does. Through the hub and the agent: both PodGroups have minMember 0, so their
    pods are elastic and the hub has no gang to place (nor count) in the group; it admits both,
    the agent binds one and keeps the other pending (tests/unit/admission/test_admission_group_limits.py
    has the hub counting gangs)."""
    queue = Queue(
        "q-event-limit",
        affinity=affinity(["group1"], []),
        annotations={LIMITS: '{"group1":{"cpu":"3","memory":"8Gi"}}'},
    )
    case = Case(
        "nodegroup_test.go TestNodeGroupResourceLimitAllocationEvent",
        "allocation event updates nodegroup usage",
        nodes=[Node("n1", "16", "64Gi", pods=32, labels={GROUP: "group1"})],
        groups=[
            Group("pg-1", namespace="limit", queue="q-event-limit"),
            Group("pg-2", namespace="limit", queue="q-event-limit"),
        ],
        pods=[
            Pod("limit/pending-1", "pg-1", cpu="2", memory="4Gi"),
            Pod("limit/pending-2", "pg-2", cpu="2", memory="4Gi"),
        ],
        queues=[queue],
        conf=nodegroup_conf(),
        binds={"limit/pending-1": "n1"},
        waiting=[],
    )
    ssn, _ = _session(case)
    task1 = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.uid == "limit/pending-1")
    assert _verdict(ssn, "limit/pending-2")[0] == {"n1": OK}  # before any allocation
    ssn.allocate_on(task1, 0)
    assert _verdict(ssn, "limit/pending-2")[0] == {"n1": NO}  # the allocation event counted it
    check(case)
