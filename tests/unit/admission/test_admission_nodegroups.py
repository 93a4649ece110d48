"""Queue node-group affinity at the hub: a gang fits a cluster only on the nodes its queue's
affinity admits (own or the nearest ancestor's); queues without one are not confined."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import admitted, gpus, job, reason
from vglobal.admission import ClusterSnap, NodeSnap, QueueSnap, Snapshot, admit
from vglobal.model.queue_affinity import NODE_GROUP_LABEL, NODE_GROUP_MODE_LABEL, QueueAffinity


def grouped(name: str, groups: list[str | None], free: int = 8) -> ClusterSnap:
    nodes = tuple(
        NodeSnap(f"{name}-n{i}", gpus(free), gpus(8), {NODE_GROUP_LABEL: g} if g else {})
        for i, g in enumerate(groups)
    )
    return ClusterSnap(name, {}, nodes)


G2 = QueueAffinity(required=("g2",))


def test_a_gang_fits_only_on_its_queues_node_groups() -> None:
    # east has room for 2 pods, but only one of its nodes is in g2; west has two g2 nodes
    clusters = (grouped("east", ["g1", "g2"]), grouped("west", ["g2", "g2", None], free=4))
    queues = (QueueSnap("q", affinity=G2), QueueSnap("free"))
    pending = (
        job("a", "q", gpus(4), pods=4),  # g2 has room for 2 such pods in each cluster, not 4
        job("b", "q", gpus(4), pods=2, created=1),
        job("c", "free", gpus(8), pods=2, created=2),  # not confined
    )
    result = admit(Snapshot(0, queues, clusters, pending))
    # binpack: b takes the fuller west's g2 nodes; c, not confined, takes east's two nodes
    assert admitted(result) == {"b": "west", "c": "east"}
    assert "allowed nodes of" in reason(result, "a") and "queue q allows node groups g2" in reason(
        result, "a"
    )


def test_anti_affinity_and_inheritance_from_the_nearest_ancestor() -> None:
    clusters = (grouped("east", ["g1"]), grouped("west", ["g2"]))
    queues = (
        QueueSnap("dept", affinity=QueueAffinity(required=("g1", "g2"), anti_required=("g1",))),
        QueueSnap("team", parent="dept"),
        QueueSnap("own", parent="dept", affinity=QueueAffinity(preferred=("g1",))),
    )
    pending = (job("t", "team", gpus(8)), job("o", "own", gpus(8), created=1))
    assert admitted(admit(Snapshot(0, queues, clusters, pending))) == {"t": "west", "o": "east"}


def test_no_cluster_with_the_groups_says_so() -> None:
    clusters = (grouped("east", ["g1", None]),)
    result = admit(Snapshot(0, (QueueSnap("q", affinity=G2),), clusters, (job("j", "q", gpus(1)),)))
    assert reason(result, "j").endswith(
        "no candidate cluster; queue q allows node groups g2; no node of them in east"
    )


def test_an_empty_affinity_confines_nothing_and_stops_inheritance() -> None:
    clusters = (grouped("east", ["g1"]),)
    queues = (QueueSnap("dept", affinity=G2), QueueSnap("team", parent="dept", affinity=QueueAffinity()))
    assert admitted(admit(Snapshot(0, queues, clusters, (job("j", "team", gpus(8)),)))) == {"j": "east"}


def test_a_queue_naming_no_group_keeps_off_grouped_nodes_where_the_agent_runs_the_plugin() -> None:
    """As the agent's nodegroup plugin decides for a queue without affinity: strict: false (the
    default conf, "lenient") leaves it the nodes outside every group, strict leaves it none, and a
    cluster whose agent runs no nodegroup predicate does not confine it."""

    def labelled(c: ClusterSnap, mode: str | None) -> ClusterSnap:
        return replace(c, labels={NODE_GROUP_MODE_LABEL: mode} if mode else {})

    pending = (job("j", "free", gpus(8), pods=2),)
    queues = (QueueSnap("free"),)
    one_free_node = grouped("east", ["g1", None])  # room for one pod outside the groups
    for mode, fits in ((None, True), ("lenient", False), ("strict", False)):
        got = admit(Snapshot(0, queues, (labelled(one_free_node, mode),), pending))
        assert (admitted(got) == {"j": "east"}) is fits, mode
    got = admit(Snapshot(0, queues, (labelled(grouped("east", [None, None]), "strict"),), pending))
    assert "queue free names no node group" in reason(got, "j")
    got = admit(Snapshot(0, queues, (labelled(grouped("east", [None, None]), "lenient"),), pending))
    assert admitted(got) == {"j": "east"}
