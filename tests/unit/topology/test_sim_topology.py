"""Through the sim: a SimCluster's HyperNodes (manifests and label discovery) and GPUs reach the
agent's Register message, and `vglobal sim run` keeps a hard-topology gang under one switch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from vglobal.agent import report
from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.sim.run import run_simulation


def cluster_doc() -> dict[str, Any]:
    """Two racks of two 8-GPU nodes by label; a manual tier-1 HyperNode for the spare group."""
    return {
        "apiVersion": "vglobal.io/v1alpha1",
        "kind": "SimCluster",
        "metadata": {"name": "topo"},
        "spec": {
            "nodeGroups": [
                {
                    "name": f"rack{r}",
                    "count": 2,
                    "allocatable": {"cpu": "16", "memory": "64Gi"},
                    "labels": {"example.com/tor": f"tor{r}", "example.com/spine": "sp0"},
                    "gpus": {"count": 8, "memoryMiB": 40960, "model": "A100", "mig": True},
                }
                for r in range(2)
            ]
            + [{"name": "spare", "count": 1, "allocatable": {"cpu": "16", "memory": "64Gi"}}],
            "hyperNodes": [
                {
                    "apiVersion": "topology.volcano.sh/v1alpha1",
                    "kind": "HyperNode",
                    "metadata": {"name": "manual"},
                    "spec": {
                        "tier": 1,
                        "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^spare-"}}}],
                    },
                }
            ],
            "hyperNodeDiscovery": {
                "networkTopologyTypes": {
                    "dc": [
                        {"nodeLabel": "example.com/spine"},
                        {"nodeLabel": "example.com/tor"},
                        {"nodeLabel": "kubernetes.io/hostname"},
                    ]
                }
            },
        },
    }


def test_register_carries_hypernodes_and_gpus() -> None:
    backend = SimBackend(parse_sim_cluster(cluster_doc()))
    msg = report.register("topo", {}, backend.nodes(), backend.free(), [], "test", backend.hyper_nodes())
    hns = {h.name: h for h in msg.register.hypernodes}
    assert sorted(hns) == [
        "hypernode-dc-tier1-tor0",
        "hypernode-dc-tier1-tor1",
        "hypernode-dc-tier2-sp0",
        "manual",
    ]
    spine = hns["hypernode-dc-tier2-sp0"]
    assert (
        spine.tier == 2
        and spine.parent == ""
        and list(spine.nodes) == ["rack0-0", "rack0-1", "rack1-0", "rack1-1"]
    )
    assert list(spine.children) == ["hypernode-dc-tier1-tor0", "hypernode-dc-tier1-tor1"]
    assert hns["hypernode-dc-tier1-tor1"].parent == "hypernode-dc-tier2-sp0"
    assert list(hns["manual"].nodes) == ["spare-0"]
    rack = next(n for n in msg.register.nodes if n.name == "rack0-0")
    assert [(g.index, g.memory_mib, g.model, g.mig) for g in rack.gpus][:2] == [
        (0, 40960, "A100", True),
        (1, 40960, "A100", True),
    ]
    assert len(rack.gpus) == 8
    assert not next(n for n in msg.register.nodes if n.name == "spare-0").gpus


def _job(name: str, replicas: int, topology: dict[str, Any] | None, gpus: int = 8) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minAvailable": replicas,
        "tasks": [
            {
                "name": "w",
                "replicas": replicas,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "x",
                                "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": gpus}},
                            }
                        ]
                    }
                },
            }
        ],
    }
    if topology:
        spec["networkTopology"] = topology
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_sim_run_keeps_a_hard_gang_under_one_switch(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(cluster_doc()))
    jobs = tmp_path / "jobs.yaml"
    # "filler" takes one GPU on rack0-0 first, so a 2-node gang no longer fits behind tor0
    docs = [
        _job("filler", 1, None, gpus=1),
        _job("gang", 2, {"mode": "hard", "highestTierAllowed": 1}),
        _job("toobig", 3, {"mode": "hard", "highestTierName": "example.com/tor"}),
    ]
    jobs.write_text(yaml.safe_dump_all(docs))
    out = run_simulation(
        cluster_files=[cluster], jobs_path=jobs, scheduler_conf=None, until_idle=True, until=None
    )
    jobs_out = {j["name"]: j for j in json.loads(json.dumps(out))["jobs"]}
    pods = {name: [p["node"] for p in j["pods"]] for name, j in jobs_out.items()}
    assert pods["filler"] == ["rack0-0"]
    assert sorted(pods["gang"]) == ["rack1-0", "rack1-1"]
    # the hub's admission holds back a gang the cluster cannot take: it never reaches the agent
    toobig = jobs_out["toobig"]
    assert (toobig["phase"], toobig["cluster"], toobig["pods"]) == ("Pending", None, [])
    assert "job needs 24" in toobig["reason"]
