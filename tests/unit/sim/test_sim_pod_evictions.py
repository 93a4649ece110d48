"""``vglobal sim run`` executes the hub's pod-level decisions as the hub and its agents do: a
higher-priority job of the queue takes single surplus pods of an elastic job, which runs on without
them (its agent evicts exactly those pods, PodEvicted), a pod annotated ``volcano.sh/preemptable:
"false"`` is never among them, the events carry the hub's names, and a task naming an unknown
PriorityClass is refused as the hub refuses it at submit."""

from __future__ import annotations

from pathlib import Path

import pytest

from vglobal.sim.dispatch import Binding, SimulationError
from vglobal.sim.inputs import SimInputError
from vglobal.sim.run import run_simulation

CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: c1}
spec:
  nodeGroups:
  - {name: c1, count: 1, allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
"""
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
# 1 pinned pod and 3 workers, 2 must run: the cluster's 4 cpu are all taken.
ELASTIC = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: elastic}
spec:
  minAvailable: 2
  priorityClassName: low
  tasks:
  - name: ps
    replicas: 1
    template:
      metadata: {annotations: {volcano.sh/preemptable: "false"}}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
  - name: w
    replicas: 3
    template:
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
"""
URGENT = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: urgent, annotations: {vglobal.io/sim-submit-at: 10s}}
spec:
  priorityClassName: high
  tasks:
  - name: w
    replicas: 2
    template:
      spec:%s
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def _run(tmp_path: Path, *docs: str) -> dict[str, dict[str, object]]:
    (cluster := tmp_path / "c1.yaml").write_text(CLUSTER)
    (jobs := tmp_path / "jobs.yaml").write_text("---".join(docs))
    out = run_simulation(cluster_files=[cluster], jobs_path=jobs, until=60.0)
    return {j["name"]: j for j in out["jobs"]}


def test_a_higher_priority_job_takes_single_surplus_pods_and_the_elastic_job_runs_on(tmp_path: Path) -> None:
    got = _run(tmp_path, CLASSES, ELASTIC, URGENT % "")
    elastic, urgent = got["elastic"], got["urgent"]
    running = sorted(p["name"] for p in elastic["pods"] if p["node"] and p["phase"] == "Running")  # type: ignore[attr-defined]
    assert running == ["elastic-ps-0", "elastic-w-0"], elastic["pods"]
    assert (elastic["phase"], elastic["cluster"], elastic["admittedAt"]) == (
        "Running",
        "c1",
        0.0,
    )  # the same run
    events = [(e["reason"], e["message"]) for e in elastic["events"]]  # type: ignore[attr-defined]
    evicted = sorted(m.split()[1] for r, m in events if r == "PodEvicted")
    assert evicted == ["elastic-w-1", "elastic-w-2"], events
    hub = [m for r, m in events if r in ("Preempted", "Reclaimed")]
    assert len(hub) == 1 and hub[0].startswith("2 pods to evict: "), events
    assert [e["reason"] for e in urgent["events"]].count("Preempting") == 1  # type: ignore[attr-defined]
    assert urgent["cluster"] == "c1" and len(urgent["pods"]) == 2  # type: ignore[arg-type]


def test_a_task_naming_an_unknown_priority_class_is_refused_as_at_the_hub(tmp_path: Path) -> None:
    with pytest.raises(SimInputError) as err:
        _run(tmp_path, CLASSES, ELASTIC, URGENT % "\n        priorityClassName: nosuch")
    assert 'spec.tasks[0].template.spec.priorityClassName: priority class "nosuch" not found' in str(
        err.value
    )


def test_a_binding_moves_only_as_the_hubs_do() -> None:
    b = Binding(waiting_since=0.0)
    with pytest.raises(SimulationError, match="does not move from Suspended to Running"):
        b.move(b.phase.__class__("Running"))


def test_a_job_with_a_pinned_task_is_never_taken_whole(tmp_path: Path) -> None:
    """minAvailable 4 of 4 pods leaves no surplus pod: only the whole job could go, and its pinned
    ps pod never goes, so the urgent job waits and no pod of elastic is evicted."""
    got = _run(tmp_path, CLASSES, ELASTIC.replace("minAvailable: 2", "minAvailable: 4"), URGENT % "")
    elastic, urgent = got["elastic"], got["urgent"]
    running = sorted(p["name"] for p in elastic["pods"] if p["node"] and p["phase"] == "Running")  # type: ignore[attr-defined]
    assert running == ["elastic-ps-0", "elastic-w-0", "elastic-w-1", "elastic-w-2"], elastic["pods"]
    reasons = [e["reason"] for e in elastic["events"]]  # type: ignore[attr-defined]
    assert not {"PodEvicted", "Preempted", "Reclaimed"} & set(reasons), reasons
    placed = [p for p in urgent["pods"] if p["node"]]  # type: ignore[attr-defined]
    assert not placed and len(urgent["pods"]) <= 2, urgent["pods"]  # type: ignore[arg-type]
