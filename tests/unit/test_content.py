"""The demo's content stays valid: every file in clusters/ and examples/ parses, and the examples
run to completion on the simulated clusters through the agents' code."""

from __future__ import annotations

from pathlib import Path

from vglobal.agent.backends.sim_cluster import SimCluster, parse_sim_manifests
from vglobal.model.cronjob import CronJob
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
    assert {type(m) for m in examples} == {Job, Queue, CronJob, JobTemplate, JobFlow}
    # Two GPU clusters of different shapes and a CPU cluster.
    gpus = sorted({n.allocatable.get("nvidia.com/gpu", 0) for c in clusters for n in c.nodes})
    assert gpus == [0, 4000, 8000]


def test_examples_complete_on_the_simulated_clusters() -> None:
    result = run_simulation(
        cluster_files=sorted((ROOT / "clusters").glob("*.yaml")), jobs_path=ROOT / "examples", until_idle=True
    )
    phases = {j["name"]: j["phase"] for j in result["jobs"]}
    assert phases == dict.fromkeys(
        ["llm-pretrain", "mindspore-cpu", "preprocess-shards", "ray-cluster-job", "tensorflow-dist-mnist"],
        "Completed",
    )
    by_name = {j["name"]: j for j in result["jobs"]}
    assert by_name["preprocess-shards"]["cluster"] == "cpu-central"  # its cluster-selector gpu=none
