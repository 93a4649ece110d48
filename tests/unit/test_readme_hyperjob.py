"""The README's HyperJob example names clusters of clusters/ and runs there: each child on a cluster
of its clusterNames, both at once (a HyperJob naming a cluster the hub does not know is refused)."""

from __future__ import annotations

import re
from pathlib import Path

from vglobal.agent.backends.sim_cluster import parse_sim_manifests
from vglobal.model.hyperjob import HyperJob
from vglobal.model.manifests import parse_manifests
from vglobal.sim.run import run_simulation

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_hyperjob_runs_on_the_readme_clusters(tmp_path: Path) -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    example = next(b for b in blocks if "kind: HyperJob" in b and "clusterNames" in b)
    (hj,) = parse_manifests(example)
    assert isinstance(hj, HyperJob)
    clusters = {c.name for f in (ROOT / "clusters").glob("*.yaml") for c in parse_sim_manifests(f.read_text())}
    pinned = {name for rj in hj.replicated for name in rj.cluster_names}
    assert pinned and pinned <= clusters, pinned - clusters
    (tmp_path / "hyperjob.yaml").write_text(example)
    result = run_simulation(
        cluster_files=sorted((ROOT / "clusters").glob("*.yaml")), jobs_path=tmp_path, until=600.0
    )
    placed = {j["name"]: (j["phase"], j["cluster"]) for j in result["jobs"]}
    assert placed == {"llm-trainer-0": ("Running", "gpu-east"), "llm-trainer-1": ("Running", "gpu-west")}
