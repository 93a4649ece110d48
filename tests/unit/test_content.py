"""The demo's content stays valid: every file in clusters/ and examples/ parses, there is an example
of each kind the README describes, and the examples run to their end on the simulated clusters
through the agents' code (a long-running kind: up, every pod placed)."""

from __future__ import annotations

from pathlib import Path

import yaml

from vglobal.agent.backends.sim_cluster import SimCluster, parse_sim_manifests
from vglobal.model.cronjob import CronJob
from vglobal.model.hyperjob import HyperJob
from vglobal.model.job import Job
from vglobal.model.jobflow import JobFlow, JobTemplate
from vglobal.model.manifests import parse_manifests
from vglobal.model.queue import Queue
from vglobal.sim.run import run_simulation

ROOT = Path(__file__).resolve().parents[2]


def test_clusters_and_examples_parse() -> None:
    clusters = [m for f in sorted((ROOT / "clusters").glob("*.yaml")) for m in parse_sim_manifests(f.read_text())]
    examples = [m for f in sorted((ROOT / "examples").glob("*.yaml")) for m in parse_manifests(f.read_text())]
    assert len(clusters) == 3 and all(isinstance(c, SimCluster) for c in clusters)
    assert {type(m) for m in examples} == {Job, Queue, CronJob, JobTemplate, JobFlow, HyperJob}
    # Two GPU clusters of different shapes and a CPU cluster.
    gpus = sorted({n.allocatable.get("nvidia.com/gpu", 0) for c in clusters for n in c.nodes})
    assert gpus == [0, 4000, 8000]


def test_examples_complete_on_the_simulated_clusters() -> None:
    result = run_simulation(
        cluster_files=sorted((ROOT / "clusters").glob("*.yaml")), jobs_path=ROOT / "examples", until_idle=True
    )
    phases = {j["name"]: j["phase"] for j in result["jobs"]}
    up = ["inference-api", "kv-store", "ray-notebook", "vllm-llama"]
    assert phases == {
        **dict.fromkeys(
            ["llm-pretrain", "mindspore-cpu", "preprocess-shards", "ray-cluster-job", "tensorflow-dist-mnist",
             "pi", "ray-batch-inference", "finetune-trainer-0", "finetune-trainer-1"],
            "Completed",
        ),
        **dict.fromkeys(up, "Running"),
    }  # fmt: skip
    by_name = {j["name"]: j for j in result["jobs"]}
    # Up means every replica placed: 2 + 3 + head and 2 workers + 2 groups of 2.
    assert {n: len(by_name[n]["pods"]) for n in up} == dict(zip(up, [2, 3, 3, 4], strict=True))
    assert all(p["phase"] == "Running" for n in up for p in by_name[n]["pods"])
    # The HyperJob's two children went one to each GPU cluster it names.
    assert {by_name[f"finetune-trainer-{i}"]["cluster"] for i in (0, 1)} == {"gpu-east", "gpu-west"}
    assert by_name["preprocess-shards"]["cluster"] == "cpu-central"  # its cluster-selector gpu=none


def test_an_example_of_each_kind_the_readme_describes() -> None:
    kinds = {
        (doc["apiVersion"], doc["kind"])
        for f in (ROOT / "examples").glob("*.yaml")
        for doc in yaml.safe_load_all(f.read_text())
        if doc
    }
    assert kinds >= {
        ("batch.volcano.sh/v1alpha1", "Job"),
        ("training.volcano.sh/v1alpha1", "HyperJob"),
        ("ray.io/v1", "RayCluster"),
        ("ray.io/v1", "RayJob"),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("batch/v1", "Job"),
        ("batch.volcano.sh/v1alpha1", "CronJob"),
        ("flow.volcano.sh/v1alpha1", "JobFlow"),
        ("scheduling.volcano.sh/v1beta1", "Queue"),
    }
    clusters = {yaml.safe_load(f.read_text())["metadata"]["name"] for f in (ROOT / "clusters").glob("*.yaml")}
    for f in (ROOT / "examples").glob("*.yaml"):
        for doc in filter(None, yaml.safe_load_all(f.read_text())):
            # A HyperJob or a placement annotation names only clusters the demo has.
            named = str(doc["metadata"].get("annotations", {}).get("vglobal.io/clusters", "")).split(",")
            for rj in doc.get("spec", {}).get("replicatedJobs", []) if doc["kind"] == "HyperJob" else []:
                named += rj.get("clusterNames", [])
            assert set(filter(None, named)) <= clusters, (f.name, named)
