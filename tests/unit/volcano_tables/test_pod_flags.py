"""How the agent reads ``volcano.sh/preemptable`` from a Volcano pod, as Volcano's
``GetPodPreemptable`` does: the annotation first, then the label, each parsed as Go's ParseBool
(a value it cannot parse means not preemptable). The Go tables set it as a pod label."""

from __future__ import annotations

import pytest

from tests.unit.volcano_tables.harness import Case, Group, Node, Pod, Queue, _Federation, conf
from vglobal.agent.snapshot import cluster_snapshot
from vglobal.scheduler import DEFAULT_AGENT_CONF
from vglobal.scheduler.session import Session
from vglobal.scheduler.tables import ACTIONS, PLUGINS

KEY = "volcano.sh/preemptable"


def _preemptable(pod: Pod) -> bool:
    case = Case(
        "predicates_test.go (pod flags)",
        "preemptable flag",
        nodes=[Node("n1")],
        groups=[Group("pg1")],
        pods=[pod],
        queues=[Queue("c1")],
        conf=conf("allocate", ["gang"]),
    )
    fed = _Federation(case)
    (member,) = fed.members.values()
    member.run = fed._run(member)
    state = cluster_snapshot(fed.nodes, fed.runs())
    ssn = Session(state, DEFAULT_AGENT_CONF, actions=ACTIONS, plugins=PLUGINS)
    (job,) = ssn.jobs.values()
    (task,) = job.tasks.values()
    return task.preemptable


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("True", True),
        ("1", True),
        ("t", True),
        ("false", False),
        ("F", False),
        ("yes", False),
    ],
)
def test_label_is_read_as_go_parses_it(value: str, expected: bool) -> None:
    assert _preemptable(Pod("c1/p1", "pg1", labels={KEY: value})) is expected


def test_annotation_wins_over_label() -> None:
    assert _preemptable(Pod("c1/p1", "pg1", labels={KEY: "false"}, annotations={KEY: "true"})) is True
    assert _preemptable(Pod("c1/p1", "pg1", labels={KEY: "true"}, annotations={KEY: "0"})) is False


def test_unset_is_preemptable() -> None:
    assert _preemptable(Pod("c1/p1", "pg1")) is True
