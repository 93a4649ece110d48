"""predicates: required inter-pod affinity and anti-affinity (the k8s InterPodAffinity filter)."""

from __future__ import annotations

from typing import Any

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.scheduler import TaskStatus

R = TaskStatus.Running
ZONE = "topology.kubernetes.io/zone"
NODES = [node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "a"}), node("n3", labels={ZONE: "b"})]
CONF = conf("allocate", ["gang"], ["predicates"])


def _term(app: str, key: str = ZONE, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def _affinity(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def _run(pods: list[Any], groups: list[Group], nodes: list[Any] = NODES) -> dict[str, str]:
    return dict(Case("pod affinity", nodes, groups, pods, [queue("c1")], CONF).run().binds)


def test_affinity_follows_a_running_pod_into_its_zone() -> None:
    binds = _run(
        [
            pod("c1/db-0", "c1/db", status=R, node="n3", labels={"app": "db"}),
            pod("c1/web-0", "c1/web", affinity=_affinity("podAffinity", _term("db"))),
        ],
        [Group("c1/db", "c1", phase="Running"), Group("c1/web", "c1", min_member=1)],
    )
    assert binds == {"c1/web-0": "n3"}


def test_affinity_with_no_match_anywhere_waits_unless_the_pod_matches_itself() -> None:
    alone = _run(
        [pod("c1/web-0", "c1/web", affinity=_affinity("podAffinity", _term("db")))],
        [Group("c1/web", "c1", min_member=1)],
    )
    assert alone == {}
    first = _run(
        [pod("c1/db-0", "c1/db", labels={"app": "db"}, affinity=_affinity("podAffinity", _term("db")))],
        [Group("c1/db", "c1", min_member=1)],
    )
    assert list(first) == ["c1/db-0"]


def test_anti_affinity_keeps_a_gang_in_different_zones() -> None:
    anti = _affinity("podAntiAffinity", _term("w"))
    pods = [pod(f"c1/w-{i}", "c1/w", labels={"app": "w"}, affinity=anti) for i in range(3)]
    placed = _run(pods[:2], [Group("c1/w", "c1", min_member=2)])
    assert placed.keys() == {"c1/w-0", "c1/w-1"}
    assert "n3" in placed.values()  # zone a holds one of them, zone b (n3 only) the other
    assert _run(pods, [Group("c1/w", "c1", min_member=3)]) == {}  # two zones for three pods


def test_a_running_pods_anti_affinity_keeps_others_out_of_its_zone() -> None:
    binds = _run(
        [
            pod("c1/a-0", "c1/a", status=R, node="n1", affinity=_affinity("podAntiAffinity", _term("b"))),
            pod("c1/b-0", "c1/b", labels={"app": "b"}),
        ],
        [Group("c1/a", "c1", phase="Running"), Group("c1/b", "c1", min_member=1)],
    )
    assert binds == {"c1/b-0": "n3"}


def test_terms_select_the_owners_namespace_unless_they_name_others() -> None:
    other_ns = [
        pod("c2/db-0", "c2/db", status=R, node="n3", labels={"app": "db"}),
    ]
    groups = [Group("c2/db", "c1", phase="Running"), Group("c1/web", "c1", min_member=1)]
    same = _run(
        [*other_ns, pod("c1/web-0", "c1/web", affinity=_affinity("podAffinity", _term("db")))], groups
    )
    assert same == {}
    named = _run(
        [
            *other_ns,
            pod("c1/web-0", "c1/web", affinity=_affinity("podAffinity", _term("db", namespaces=["c2"]))),
        ],
        groups,
    )
    assert named == {"c1/web-0": "n3"}
