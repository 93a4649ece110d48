"""Required pod anti-affinity at the hub: a gang's terms close the nodes of the topology domain of any
running pod they select (labels, namespace), for placement and for the victim planners, which then
take the pod that closes the node."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import admitted, job, reason
from vglobal.admission import ClusterSnap, NodeSnap, QueueSnap, RunningJob, RunningPod, Snapshot, admit
from vglobal.model.pod_anti_affinity import AntiTerm
from vglobal.model.resources import ResourceVector

HOST, ZONE = "kubernetes.io/hostname", "zone"


def cpu(n: float) -> ResourceVector:
    return ResourceVector({"cpu": int(n * 1000)})


def term(key: str, selector: dict[str, object], **kw: object) -> AntiTerm:
    return AntiTerm.of({"labelSelector": selector, "topologyKey": key, **kw})


def _cluster(used: dict[str, float]) -> ClusterSnap:
    """Four 2-cpu nodes in two zones."""
    zones = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}
    nodes = tuple(NodeSnap(n, cpu(2 - used.get(n, 0)), cpu(2), {HOST: n, ZONE: z}) for n, z in zones.items())
    return ClusterSnap("c", {}, nodes)


def _run(
    uid: str, node: str, labels: dict[str, str], *, ns: str = "ns", priority: int = 1, created: float = 0
) -> RunningJob:
    return RunningJob(
        uid=uid,
        queue="q",
        cluster="c",
        priority=priority,
        created=created,
        request=cpu(1),
        placements={node: cpu(1)},
        running_since=0.0,
        pods=(RunningPod(f"{uid}-0", node, cpu(1), labels=labels),),
        min_available=0,
        namespace=ns,
    )


def test_placement_keeps_the_gang_out_of_a_selected_pods_zone() -> None:
    running = (_run("db", "n1", {"app": "db"}), _run("other", "n3", {"app": "web"}, ns="elsewhere"))
    anti = (term(ZONE, {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}),)
    pending = (replace(job("j", "q", cpu(2), pods=2), anti_affinity=anti),)
    got = admit(Snapshot(0, (QueueSnap("q"),), (_cluster({"n1": 1, "n3": 1}),), pending, running))
    # zone a holds the db pod; the web pod in zone b is in another namespace: two pods of 2 cpu
    # would need n2 and n4 free, n3 half full: no room left in zone b
    assert admitted(got) == {}
    assert "anti-affinity" in reason(got, "j")
    wider = (replace(anti[0], namespaces=("ns", "elsewhere")),)
    pending = (replace(pending[0], gang=((cpu(1), 2),), request=cpu(2), anti_affinity=wider),)
    got = admit(Snapshot(0, (QueueSnap("q"),), (_cluster({"n1": 1, "n3": 1}),), pending, running))
    assert admitted(got) == {}  # both zones now closed
    pending = (replace(pending[0], anti_affinity=anti),)
    got = admit(Snapshot(0, (QueueSnap("q"),), (_cluster({"n1": 1, "n3": 1}),), pending, running))
    assert admitted(got) == {"j": "c"}  # zone b only


def test_preemption_takes_the_pod_that_closes_the_node() -> None:
    # One node, full; victim order would take the newer "plain" job first.
    node = ClusterSnap("c", {}, (NodeSnap("n1", cpu(0), cpu(2), {HOST: "n1"}),))
    running = (
        _run("conflict", "n1", {"app": "db"}, created=1),
        _run("plain", "n1", {"app": "web"}, created=2),
    )
    anti = (term(HOST, {"matchLabels": {"app": "db"}}),)
    pending = (replace(job("hi", "q", cpu(1), priority=100), anti_affinity=anti),)
    got = admit(Snapshot(0, (QueueSnap("q"),), (node,), pending, running))
    assert admitted(got) == {"hi": "c"}
    assert [p for e in got.evictions for p in e.pods] == ["conflict-0"]
    assert got.decisions["hi"].nominated == ("n1",)  # type: ignore[union-attr]


def test_a_job_whose_anti_affinity_finds_no_victims_does_not_stop_the_same_gang_without_it() -> None:
    # n1 is full: a lower-priority pod that may go, and a pod of the preemptors' own priority that
    # closes n1 to the anti-affinity job. The older job (with the term) cannot preempt; the younger
    # one of the same gang and priority can, in the same cycle.
    node = ClusterSnap("c", {}, (NodeSnap("n1", cpu(0), cpu(2), {HOST: "n1"}),))
    running = (_run("low", "n1", {"app": "web"}), _run("peer", "n1", {"app": "db"}, priority=100))
    anti = (term(HOST, {"matchLabels": {"app": "db"}}),)
    pending = (
        replace(job("picky", "q", cpu(1), priority=100, created=1), anti_affinity=anti),
        job("plain", "q", cpu(1), priority=100, created=2),
    )
    got = admit(Snapshot(0, (QueueSnap("q"),), (node,), pending, running))
    assert admitted(got) == {"plain": "c"}
    assert [p for e in got.evictions for p in e.pods] == ["low-0"]


def test_a_running_pods_own_anti_affinity_keeps_the_gang_out_of_its_domain() -> None:
    # The pod on n1 (zone a) will have no pod labelled app=db in its zone: a gang whose template
    # says app=db goes to zone b; one of another app may go to zone a.
    guard = replace(
        _run("guard", "n1", {"app": "guard"}),
        anti_affinity=(term(ZONE, {"matchLabels": {"app": "db"}}),),
    )
    db = replace(job("db", "q", cpu(2)), tasks=("w",), task_labels={"w": {"app": "db"}})
    web = replace(job("web", "q", cpu(2), created=1), tasks=("w",), task_labels={"w": {"app": "web"}})
    # zone a has n2 free (2 cpu), zone b has nothing free but n4 (2 cpu): one pod each
    cluster = _cluster({"n1": 1, "n3": 2})
    got = admit(Snapshot(0, (QueueSnap("q"),), (cluster,), (db, web), (guard,)))
    assert admitted(got) == {"db": "c", "web": "c"}
    # with zone b full, the db gang has nowhere to go though n2 is free
    full_b = _cluster({"n1": 1, "n3": 2, "n4": 2})
    got = admit(Snapshot(0, (QueueSnap("q"),), (full_b,), (db,), (guard,)))
    assert admitted(got) == {}
    assert "anti-affinity" in reason(got, "db")
    got = admit(Snapshot(0, (QueueSnap("q"),), (full_b,), (web,), (guard,)))
    assert admitted(got) == {"web": "c"}
