"""Workload kinds through hub and simulated agents: a RayCluster admitted on its autoscaling gang, a
LeaderWorkerSet run whole on one cluster, a batch/v1 Job to its end, bad manifests refused."""

from __future__ import annotations

import grpc
import pytest

from tests.e2e.harness import System, wait_for
from vglobal.client import VGlobalError

pytestmark = pytest.mark.e2e

CPU = "resources: {{requests: {{cpu: '{cpu}'}}}}"


def pod(cpu: str) -> str:
    return "{spec: {containers: [{name: c, image: i, " + CPU.format(cpu=cpu) + "}]}}"


# Autoscaling on, minReplicas 2 of 4 workers of 4 cpu, head of 4 cpu: the gang is 12 cpu.
RAY_CLUSTER = f"""
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: ray, labels: {{volcano.sh/queue-name: default}}}}
spec:
  enableInTreeAutoscaling: true
  headGroupSpec: {{template: {pod("4")}}}
  workerGroupSpecs:
  - {{groupName: workers, replicas: 4, minReplicas: 2, maxReplicas: 4, template: {pod("4")}}}
"""

# 3 groups of 4 pods of 1 cpu: 12 cpu, which only the larger cluster holds.
LWS = f"""
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {{name: lws}}
spec:
  replicas: 3
  leaderWorkerTemplate: {{size: 4, workerTemplate: {pod("1")}}}
"""

BATCH = f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: pi, annotations: {{vglobal.io/sim-duration: 1s}}}}
spec: {{parallelism: 2, completions: 2, template: {pod("1")}}}
"""


def cluster(name: str, cpu: str, nodes: int = 1) -> str:
    return f"""
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - {{name: {name}, count: {nodes}, allocatable: {{cpu: "{cpu}", memory: 64Gi, pods: "110"}}}}
"""


def test_a_raycluster_is_admitted_on_its_gang_and_an_lws_runs_whole_on_one_cluster(system: System) -> None:
    system.start_hub()
    system.start_agent("small", cluster("small", "12"))  # holds head + 2 workers, not all 4
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "cluster registered", system)
    with system.client() as c:
        c.submit_job(RAY_CLUSTER)
        ray = wait_for(
            lambda: (
                (j := c.get_job("ray")).binding_phase == "Running"
                and sum(1 for p in j.placements if p.node and p.phase == "Running") == 3
                and j
            ),
            60,
            "head and 2 workers running",
            system,
        )
        assert ray.cluster == "small" and ray.phase == "Running"
        described = system.cli("describe", "job", "ray").stdout
        assert "Kind:" in described and "RayCluster" in described, described
        assert "spec.workerGroupSpecs[0].minReplicas (in-tree autoscaling on)" in described, described
        assert "Must start together: 3 pods, cpu=12 (the whole job: 5 pods, cpu=20)" in described, described
        # The LWS needs 12 cpu whole; the small cluster has none left: it waits, no pod of it starts.
        c.submit_job(LWS)
        wait_for(lambda: c.get_job("lws").reason, 30, "the LWS's reason", system)
        assert not [p for p in c.get_job("lws").placements if p.node]
        system.start_agent("large", cluster("large", "16"))
        lws = wait_for(
            lambda: (
                (j := c.get_job("lws")).binding_phase == "Running"
                and sum(1 for p in j.placements if p.node and p.phase == "Running") == 12
                and j
            ),
            60,
            "the LWS's 12 pods running",
            system,
        )
        assert lws.cluster == "large"
        c.submit_job(BATCH)
        done = wait_for(
            lambda: (j := c.get_job("pi")).phase in ("Completed", "Failed") and j, 60, "pi done", system
        )
        assert done.phase == "Completed"
        # Long-running kinds hold their pods until deleted.
        assert c.get_job("ray").phase == "Running"
        before = len(c.list_jobs())
        with pytest.raises(VGlobalError) as err:
            c.submit_job(
                RAY_CLUSTER.replace("minReplicas: 2", "minReplicas: 6").replace("name: ray", "name: bad")
            )
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "spec.workerGroupSpecs[0].minReplicas" in str(err.value)
        assert len(c.list_jobs()) == before  # nothing stored


def test_each_lws_group_runs_whole_and_a_group_that_cannot_fit_waits_whole(system: System) -> None:
    # 10 cpu: two groups of 4 and 2 cpu more, which would hold half of the third group.
    system.start_hub()
    system.start_agent("one", cluster("one", "10"))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "cluster registered", system)
    with system.client() as c:
        (system.tmp / "lws.yaml").write_text(LWS + "---" + BATCH.replace("name: pi", "name: pi2"))
        said = system.cli("apply", "-f", str(system.tmp / "lws.yaml")).stdout.splitlines()
        assert said == [
            "leaderworkerset.leaderworkerset.x-k8s.io/default/lws created",
            "job.batch/default/pi2 created",
        ]
        lws = wait_for(
            lambda: (
                (j := c.get_job("lws")).binding_phase == "Running"
                and sum(1 for p in j.placements if p.node and p.phase == "Running") == 8
                and j
            ),
            60,
            "two whole groups running",
            system,
        )
        assert lws.cluster == "one" and lws.kind == "LeaderWorkerSet" and lws.min_available == 4
        # The agent tried the third group and found no room for it whole (2 cpu are left, half a group).
        wait_for(
            lambda: any(e.reason == "Unschedulable" for e in c.explain_job("lws").events),
            30,
            "the third group found unschedulable",
            system,
        )
        lws = c.get_job("lws")
        placed = sorted(p.pod for p in lws.placements if p.node)
        assert placed == sorted(["lws-leader-0", "lws-leader-1", *(f"lws-worker-{i}" for i in range(6))])
        waiting = sorted(p.pod for p in lws.placements if not p.node)
        assert waiting == ["lws-leader-2", "lws-worker-6", "lws-worker-7", "lws-worker-8"], waiting
        table = system.cli("get", "jobs").stdout
        assert "KIND" in table and "LeaderWorkerSet" in table, table
        described = system.cli("describe", "job", "lws").stdout
        assert "Groups: 3 of 4 pods, each placed whole" in described, described
        assert "Must start together: 4 pods, cpu=4" in described, described


CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""
ONE_CPU = "{containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]}"
# Each fills its 4-cpu cluster with 4 pods of which 2 are its gang; no duration: they run on.
LOW_RAY = f"""
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: ray, labels: {{ray.io/priority-class-name: low}}, annotations: {{vglobal.io/clusters: a}}}}
spec:
  enableInTreeAutoscaling: true
  headGroupSpec: {{template: {{spec: {ONE_CPU}}}}}
  workerGroupSpecs:
  - {{groupName: w, replicas: 3, minReplicas: 1, maxReplicas: 3, template: {{spec: {ONE_CPU}}}}}
"""
LOW_BATCH = f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: batch
  annotations: {{vglobal.io/clusters: b, scheduling.volcano.sh/group-min-member: "2"}}
spec:
  parallelism: 4
  template: {{spec: {{priorityClassName: low, restartPolicy: Never, {ONE_CPU[1:-1]}}}}}
"""


def urgent(name: str, cluster_name: str) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, annotations: {{vglobal.io/clusters: {cluster_name}}}}}
spec:
  priorityClassName: high
  minAvailable: 2
  tasks:
  - {{name: w, replicas: 2, template: {{spec: {ONE_CPU}}}}}
"""


def running(j: object) -> int:
    return sum(1 for p in getattr(j, "placements", ()) if p.node and p.phase == "Running")


def test_a_higher_priority_job_preempts_a_batch_job_but_not_a_raycluster(system: System) -> None:
    system.start_hub()
    system.start_agent("a", cluster("a", "4"))
    system.start_agent("b", cluster("b", "4"))
    wait_for(lambda: len(system.get_json("clusters")) == 2, 30, "clusters registered", system)
    (system.tmp / "classes.yaml").write_text(CLASSES)
    system.cli("apply", "-f", str(system.tmp / "classes.yaml"))
    with system.client() as c:
        c.submit_job(LOW_RAY)
        c.submit_job(LOW_BATCH)
        for name in ("ray", "batch"):
            wait_for(lambda n=name: running(c.get_job(n)) == 4, 60, f"{name}'s 4 pods running", system)
        c.submit_job(urgent("takes", "b"))
        c.submit_job(urgent("waits", "a"))
        # On b the batch Job gives up its 2 surplus pods to the urgent job.
        takes = wait_for(
            lambda: (j := c.get_job("takes")).binding_phase == "Running" and j, 60, "takes", system
        )
        assert takes.cluster == "b"
        assert [e for e in c.explain_job("takes").events if e.reason == "Preempting"]
        # On a the RayCluster holds its pods: the urgent job waits, with no preemption asked.
        waits = wait_for(
            lambda: ((j := c.get_job("waits")).reason or j.binding_phase != "Suspended") and j,
            60,
            "waits' reason",
            system,
        )
        assert waits.binding_phase == "Suspended", waits
        assert not [e for e in c.explain_job("waits").events if e.reason == "Preempting"]
        ray = c.get_job("ray")
        assert running(ray) == 4 and ray.kind == "RayCluster"
        assert not [e for e in c.explain_job("ray").events if e.reason in ("Preempted", "Reclaimed")]
