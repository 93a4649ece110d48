"""kubectl's apply, as a user runs it against a hub and a simulated cluster: a waiting job admitted
on the manifest applied over it; a Deployment created, applied again unchanged, shown by `diff`,
scaled up by a new manifest in place (its pods added in the cluster, its queue charged for them,
what the queue's capability refuses left waiting), scaled down by `vglobal scale`; an immutable
change refused naming the field with nothing stored; `--prune` deleting the job gone from the files
and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e

CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: east}
spec:
  nodeGroups:
  - {name: n, count: 1, allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
"""

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: serve, labels: {app.kubernetes.io/part-of: demo}}
spec: {weight: 1, capability: {cpu: "4"}}
"""


def deployment(replicas: int, image: str = "vllm:1") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inference
  labels: {{app.kubernetes.io/part-of: demo, volcano.sh/queue-name: serve}}
spec:
  replicas: {replicas}
  template:
    spec:
      containers: [{{name: m, image: "{image}", resources: {{requests: {{cpu: "1"}}}}}}]
"""


def vcjob(name: str, labels: str, cpu: str = "1") -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, labels: {{{labels}}}}}
spec:
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def pods(system: System) -> list[Any]:
    with system.client() as c:
        return list(c.get_job("inference").placements)


def cpu_of(system: System, queue: str) -> str:
    """The cpus the queue is charged."""
    with system.client() as c:
        q = next(q for q in c.list_queues() if q.name == queue)
    return q.allocated.quantities.get("cpu", "0")


def test_apply_configures_scales_refuses_and_prunes(system: System) -> None:
    system.start_hub()
    system.start_agent("east", CLUSTER)
    repo = system.tmp / "repo"
    repo.mkdir()
    (repo / "queue.yaml").write_text(QUEUE)
    (repo / "serve.yaml").write_text(deployment(2))
    (repo / "batch.yaml").write_text(vcjob("old", "app.kubernetes.io/part-of: demo"))
    # A job no node holds waits; applied again smaller, it is admitted on its new manifest. It
    # carries no selector: never pruned.
    big = system.apply_text("other", vcjob("other", "team: b", cpu="64"))
    assert "job.batch.volcano.sh/default/other created" in big.stdout
    with system.client() as c:
        waits = ("ExceedsCapacity", "NeverFits", "NoFit")
        wait_for(lambda: c.get_job("other").reason_kind in waits, 30, "other waits: too big", system)
        smaller = system.apply_text("other", vcjob("other", "team: b")).stdout
        assert "job.batch.volcano.sh/default/other configured" in smaller, smaller
        wait_for(lambda: c.get_job("other").phase == "Running", 60, "other runs on its new manifest", system)

    first = system.cli("apply", "-f", str(repo)).stdout
    assert "queue.scheduling.volcano.sh/serve created" in first, first
    assert "deployment.apps/default/inference created" in first, first
    assert "job.batch.volcano.sh/default/old created" in first, first
    wait_for(lambda: sum(p.phase == "Running" for p in pods(system)) == 2, 60, "2 pods running", system)

    again = system.cli("apply", "-f", str(repo)).stdout
    assert again.count(" unchanged") == 3, again
    assert system.cli("diff", "-f", str(repo), check=False).returncode == 0

    # More replicas: configured in place, the new pods run, the queue is charged for them.
    (repo / "serve.yaml").write_text(deployment(3))
    diff = system.cli("diff", "-f", str(repo), check=False)
    assert diff.returncode == 1, diff.stderr
    assert "-  replicas: 2\n+  replicas: 3" in diff.stdout, diff.stdout
    assert "live/deployment.apps/default/inference" in diff.stdout
    with system.client() as c:
        uid, gen = c.get_job("inference").uid, c.get_job("inference").generation
    out = system.cli("apply", "-f", str(repo)).stdout
    assert "deployment.apps/default/inference configured" in out, out
    assert "queue.scheduling.volcano.sh/serve unchanged" in out, out
    wait_for(lambda: sum(p.phase == "Running" for p in pods(system)) == 3, 60, "3 pods running", system)
    wait_for(lambda: cpu_of(system, "serve") == "3", 30, "queue serve charged 3 cpu", system)
    shown = system.job("inference")
    assert shown["metadata"]["generation"] == 2
    with system.client() as c:
        wait_for(lambda: c.get_job("inference").observed_generation == 2, 30, "observed generation 2", system)
        j = c.get_job("inference")
        assert (j.uid, j.generation) == (uid, gen)  # the same run, changed in place

    # Beyond the queue's capability (4 cpu): the fifth and sixth pods wait, the queue holds 4.
    scaled = system.cli("scale", "deployment/inference", "--replicas", "6").stdout
    assert "deployment.apps/default/inference scaled" in scaled, scaled
    wait_for(lambda: sum(p.phase == "Running" for p in pods(system)) == 4, 60, "4 pods running", system)
    assert len(pods(system)) == 6
    wait_for(lambda: cpu_of(system, "serve") == "4", 30, "queue serve charged 4 cpu", system)
    # Down to one: the others go, and free what they held.
    system.cli("scale", "deploy/inference", "--replicas", "1")
    wait_for(lambda: len(pods(system)) == 1, 60, "one pod left", system)
    wait_for(lambda: cpu_of(system, "serve") == "1", 30, "queue serve charged 1 cpu", system)

    # An immutable field: refused naming it, nothing stored.
    (repo / "serve.yaml").write_text(deployment(1, image="vllm:2"))
    bad = system.cli("apply", "-f", str(repo), check=False)
    assert bad.returncode == 1
    assert "spec.template: field is immutable while the job runs" in bad.stderr, bad.stderr
    with system.client() as c:
        j = c.get_job("inference")
        assert "vllm:1" in j.manifest and j.spec_generation == 4

    # The batch job leaves the files: --prune deletes it, and nothing without the selector.
    (repo / "serve.yaml").write_text(deployment(1))
    (repo / "batch.yaml").unlink()
    pruned = system.cli("apply", "--prune", "-l", "app.kubernetes.io/part-of=demo", "-f", str(repo)).stdout
    assert "job.batch.volcano.sh/default/old pruned" in pruned, pruned
    assert pruned.count("pruned") == 1, pruned
    names = {j["name"] for j in system.get_json("jobs")}
    assert names == {"inference", "other"}, names
    assert Path(repo / "queue.yaml").exists()
