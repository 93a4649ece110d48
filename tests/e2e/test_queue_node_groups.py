"""Queue node-group affinity through hub and agent processes (the agent runs the default conf).

One simulated cluster has two nodes in group team-a, two in team-b and two in none. A job of a
queue whose affinity requires team-a runs only on team-a's nodes, as its placements show; while
they are full, the next job of that queue waits at the hub, its reason naming the group, though
four nodes are free. A queue naming no group keeps to the nodes outside every group (the default
conf runs nodegroup with strict: false). A queue's node-group limit holds its next gang at the hub;
reclaim for a queue confined to a group evicts pods only on that group's nodes."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import System, wait_for
from vglobal.client import Client

pytestmark = pytest.mark.e2e

# Nodes are named so that, without the groups, the agent (ties to the lowest name) would place each
# job elsewhere: team-b's ab-* first, then mplain-*, then team-a's za-*.
CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: east}
spec:
  nodeGroups:
  - {name: ab, count: 2, allocatable: {cpu: "4", memory: 16Gi}, labels: {volcano.sh/nodegroup-name: team-b}}
  - {name: mplain, count: 2, allocatable: {cpu: "4", memory: 16Gi}}
  - {name: za, count: 2, allocatable: {cpu: "4", memory: 16Gi}, labels: {volcano.sh/nodegroup-name: team-a}}
"""
QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: qa}
spec:
  weight: 1
  affinity:
    nodeGroupAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [team-a]
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: open}
spec: {weight: 1}
"""


def _job(name: str, queue: str, pods: int, cpu: str) -> str:
    # No duration: the pods run until the job is stopped, so the room they take stays taken.
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: {queue}
  minAvailable: {pods}
  tasks:
  - name: w
    replicas: {pods}
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def _running_on(c: Client, name: str, pods: int) -> list[str] | None:
    """The nodes of the job's running pods once all ``pods`` run, else None."""
    j = c.get_job(name)
    nodes = [p.node for p in j.placements if p.node and p.phase == "Running"]
    return nodes if j.binding_phase == "Running" and len(nodes) == pods else None


def test_a_queue_with_required_node_group_affinity_runs_only_in_its_group(system: System) -> None:
    system.start_hub()
    system.start_agent("east", CLUSTER)
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    system.apply_text("queues", QUEUES)
    system.apply_text("team-a-job", _job("team-a-job", "qa", 4, "2"))
    with system.client() as c:
        nodes = wait_for(lambda: _running_on(c, "team-a-job", 4), 60, "team-a-job's 4 pods running", system)
        # 4 pods of 2 cpu: exactly the room of team-a's two nodes, and no other node
        assert sorted(nodes) == ["za-0", "za-0", "za-1", "za-1"], nodes

        # team-a is full: the next job of qa waits at the hub, not dispatched, though ab-* and
        # mplain-* (16 cpu) are free; the reason names the group
        system.apply_text("team-a-more", _job("team-a-more", "qa", 1, "1"))
        want = "queue qa allows node groups team-a"
        wait_for(
            lambda: want in json.dumps(system.get_json("jobs")),
            60,
            "team-a-more's reason naming team-a",
            system,
        )
        more = c.get_job("team-a-more")
        assert more.binding_phase == "Suspended" and not more.cluster, more
        assert "allowed nodes of east can hold 0 of the 1 pods" in c.explain_job("team-a-more").reason

        # a queue naming no group keeps off every grouped node (strict: false)
        system.apply_text("anyone", _job("anyone", "open", 2, "4"))
        nodes = wait_for(lambda: _running_on(c, "anyone", 2), 60, "anyone's 2 pods running", system)
        assert sorted(nodes) == ["mplain-0", "mplain-1"], nodes
        assert c.get_job("team-a-more").binding_phase == "Suspended"  # still waiting for team-a


LIMITED = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: ql
  annotations:
    volcano.sh/nodegroup-resource-limits: '{"team-a": {"cpu": "4"}}'
spec:
  weight: 1
  affinity:
    nodeGroupAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [team-a]
"""


def test_a_queues_node_group_limit_holds_its_next_gang_at_the_hub(system: System) -> None:
    """team-a has 8 cpu free, but queue ql may hold only 4 there: its second gang of 2 x 2 cpu waits
    at the hub, saying so, instead of being sent to an agent that would not place it."""
    system.start_hub()
    system.start_agent("east", CLUSTER)
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    system.apply_text("limited", LIMITED)
    system.apply_text("first", _job("first", "ql", 2, "2"))
    with system.client() as c:
        nodes = wait_for(lambda: _running_on(c, "first", 2), 60, "first's 2 pods running", system)
        assert {n[:2] for n in nodes} == {"za"}, nodes
        system.apply_text("second", _job("second", "ql", 2, "2"))
        want = "queue ql limits what it holds in node groups team-a"
        wait_for(
            lambda: want in json.dumps(system.get_json("jobs")),
            60,
            "second's reason naming the limit",
            system,
        )
        second = c.get_job("second")
        assert second.binding_phase == "Suspended" and not second.cluster, second


# Team-a's node sorts first: the agent fills it with an elastic job's first pods, so the newest
# pods, which victim order takes first, are on team-b's node.
TWO = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: east}
spec:
  nodeGroups:
  - {name: aa, count: 1, allocatable: {cpu: "4", memory: 16Gi}, labels: {volcano.sh/nodegroup-name: team-a}}
  - {name: zb, count: 1, allocatable: {cpu: "4", memory: 16Gi}, labels: {volcano.sh/nodegroup-name: team-b}}
"""
SHARED = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: wide}
spec:
  deserved: {cpu: "4"}
  affinity:
    nodeGroupAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [team-a, team-b]
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: qa}
spec:
  deserved: {cpu: "4"}
  affinity:
    nodeGroupAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [team-a]
"""


def _on(c: Client, name: str) -> dict[str, list[str]]:
    """Node -> names of the job's running pods there."""
    out: dict[str, list[str]] = {}
    for p in c.get_job(name).placements:
        if p.node and p.phase == "Running":
            out.setdefault(p.node, []).append(p.pod)
    return out


def test_reclaim_for_a_queue_confined_to_a_group_takes_pods_only_there(system: System) -> None:
    """Queue wide runs 8 pods over its deserved share on both nodes; queue qa (team-a only) takes
    back room for its gang: the pods evicted are on team-a's node, though the newest are not, and
    its pods run there."""
    system.start_hub()
    system.start_agent("east", TWO)
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    system.apply_text("shared", SHARED)
    elastic = _job("elastic", "wide", 8, "1").replace("minAvailable: 8", "minAvailable: 1")
    system.apply_text("elastic", elastic)
    with system.client() as c:
        before = wait_for(
            lambda: (got := _on(c, "elastic")) and sum(map(len, got.values())) == 8 and got,
            60,
            "the elastic job's 8 pods running",
            system,
        )
        assert sorted(before) == ["aa-0", "zb-0"] and len(before["aa-0"]) == 4, before
        system.apply_text("taker", _job("taker", "qa", 2, "1"))
        taker = wait_for(
            lambda: (got := _on(c, "taker")) and sum(map(len, got.values())) == 2 and got,
            60,
            "the taker's 2 pods running",
            system,
        )
        assert list(taker) == ["aa-0"], taker
        after = _on(c, "elastic")
        # its pods on team-b's node are untouched; 2 of those on team-a's made room
        assert sorted(after["zb-0"]) == sorted(before["zb-0"]), (before, after)
        assert len(after.get("aa-0", [])) == 2 and set(after["aa-0"]) <= set(before["aa-0"]), (before, after)
        reclaiming = [e.message for e in c.explain_job("taker").events if e.reason == "Reclaiming"]
        assert len(reclaiming) == 1 and "evicting 2 pods of" in reclaiming[0], reclaiming
