"""The training and serving kinds on simulated clusters: the samples JobSet, the training operator,
the MPI operator, Trainer and KubeRay ship (tests/fixtures/upstream, unchanged) run in
``vglobal sim run`` and through a hub and a simulated agent, each as its gang, and a cancel stops
every pod of each; so does AppWrapper's sample, a kind hub and agent take by a KindDefinition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.cli_run import vglobal
from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e
UPSTREAM = Path(__file__).parents[1] / "fixtures" / "upstream"

# name -> (namespace, pods)
SAMPLES = {
    "paralleljobs": ("default", 5),
    "coordinator-example": ("default", 5),
    "pytorch-simple": ("kubeflow", 2),
    "pi": ("default", 3),
    "multi-node-example": ("default", 3),
    "runtime-patches-example": ("default", 2),
    "rayservice-mobilenet": ("default", 2),
    "sample": ("default", 8),  # Kthena's ModelServing: 1P1D, each an entry and 3 workers
}
POD = UPSTREAM.parent / "workloads" / "pod.nginx.yaml"  # a plain nginx Pod
PODGROUP = UPSTREAM.parent / "workloads" / "podgroup.spark.yaml"  # a Volcano PodGroup and its 3 pods
APPWRAPPER = UPSTREAM.parent / "kinds" / "wrapped-job.yaml"  # AppWrapper's sample, in queue user-queue
DEFINED = str(UPSTREAM.parent / "kinds" / "appwrapper.kinds.yaml")  # AppWrapper by a KindDefinition
QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: user-queue}\nspec: {weight: 1}\n"
CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: %(name)s}
spec:
  nodeGroups:
  - {name: %(name)s, count: %(nodes)d, allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
"""


def test_vglobal_sim_runs_every_upstream_sample_as_its_gang(tmp_path: Path) -> None:
    (small := tmp_path / "small.yaml").write_text(CLUSTER % {"name": "small", "nodes": 1})
    (large := tmp_path / "large.yaml").write_text(CLUSTER % {"name": "large", "nodes": 4})
    res = vglobal(
        "sim", "run", "--cluster", str(small), "--cluster", str(large), "--jobs", str(UPSTREAM), "--until", "1m",
        timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = {j["name"]: j for j in json.loads(res.stdout)["jobs"]}
    assert {n: (j["phase"], len(j["pods"])) for n, j in got.items()} == {
        n: ("Running", pods) for n, (_, pods) in SAMPLES.items()
    }
    # the RayService's 2 cpu and 8Gi fit the small cluster; the MPIJob's 3 cpu gang of 3 pods too
    assert {j["cluster"] for j in got.values()} <= {"small", "large"}


def test_the_samples_run_through_hub_and_agent_and_a_cancel_stops_their_pods(
    system: System, monkeypatch: pytest.MonkeyPatch
) -> None:
    system.start_hub("--kinds-file", DEFINED)
    system.start_agent("sim", CLUSTER % {"name": "sim", "nodes": 4}, "--kinds-file", DEFINED)
    wait_for(lambda: len(system.get_json("clusters")) == 1, 90, "cluster registered", system)
    texts = [path.read_text() for path in [*sorted(UPSTREAM.rglob("*.yaml")), POD, PODGROUP, APPWRAPPER]]
    texts.append(QUEUE)
    system.apply_text("all", "\n---\n".join(texts))
    samples = {**SAMPLES, "nginx": ("default", 1), "spark-pi": ("default", 3), "sample-job": ("default", 1)}
    with system.client() as c:
        for name, (ns, pods) in samples.items():
            wait_for(
                lambda n=name, ns=ns, k=pods: (
                    sum(1 for p in c.get_job(n, ns).placements if p.node and p.phase == "Running") == k
                ),
                60,
                f"{name}'s {pods} pods running",
                system,
            )
        described = system.cli("describe", "job", "pytorch-simple", "-n", "kubeflow").stdout
        assert "Gang (derived from the PyTorchJob)" in described
        assert "spec.pytorchReplicaSpecs.Worker.replicas (all replicas)" in described
        described = system.cli("describe", "job", "spark-pi").stdout
        assert "Gang (derived from the PodGroup)" in described and "spec.minTaskMember.executor" in described
        described = system.cli("describe", "job", "sample").stdout
        assert "Gang (derived from the ModelServing)" in described and "Groups: 1 of 8 pods" in described
        monkeypatch.setenv("VGLOBAL_KINDS_FILE", DEFINED)  # the CLI reads the gang as the hub does
        described = system.cli("describe", "job", "sample-job").stdout
        monkeypatch.delenv("VGLOBAL_KINDS_FILE")
        assert "Gang (derived from the AppWrapper)" in described and "every pod (the kind's" in described
        described = system.cli("describe", "job", "rayservice-mobilenet").stdout
        assert "spec.rayClusterConfig.workerGroupSpecs[0].replicas (autoscaling off)" in described
        for name, (ns, _) in samples.items():
            c.cancel_job(name, ns)
        for name, (ns, _) in samples.items():
            wait_for(
                lambda n=name, ns=ns: (
                    (j := c.get_job(n, ns)).phase == "Aborted"
                    and not any(p.phase == "Running" for p in j.placements)
                ),
                60,
                f"{name} aborted with its pods",
                system,
            )
