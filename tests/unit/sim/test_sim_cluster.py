"""Simulated clusters: node groups expand into named nodes with default labels and capacity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vglobal.agent.backends.sim_cluster import SimCluster, parse_sim_cluster, parse_sim_manifests
from vglobal.model.errors import ManifestError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"


def cluster_doc(*groups: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "vglobal.io/v1alpha1",
        "kind": "SimCluster",
        "metadata": {"name": "gpu-east", "labels": {"region": "east"}},
        "spec": {"nodeGroups": list(groups), **spec},
    }


def test_node_groups_expand_into_nodes() -> None:
    [c] = [
        m
        for m in parse_sim_manifests((FIXTURES / "queues-and-priorities.yaml").read_text())
        if isinstance(m, SimCluster)
    ]
    assert c.name == "gpu-east" and c.labels == {"region": "east"}
    assert [n.name for n in c.nodes] == ["a100-0", "a100-1", "a100-2", "a100-3", "cpu-0", "cpu-1", "h100-0"]
    a100 = c.nodes[0]
    assert a100.allocatable.to_quantities() == {
        "cpu": "64",
        "memory": "512Gi",
        "nvidia.com/gpu": "8",
        "pods": "110",
    }
    assert a100.labels == {"volcano.sh/tor": "tor-0", "kubernetes.io/hostname": "a100-0"}
    cpu = c.nodes[4]
    assert cpu.allocatable["pods"] == 110  # the kubelet default when not given
    assert cpu.taints == ({"key": "dedicated", "value": "batch", "effect": "NoSchedule"},)
    h100 = c.nodes[6]
    assert h100.allocatable["nvidia.com/gpu"] == 8000  # from gpus.count
    assert h100.gpus is not None and (h100.gpus.model, h100.gpus.memory_mib, h100.gpus.mig) == (
        "H100",
        81920,
        False,
    )


def test_zero_count_group_and_raw_topology_sections() -> None:
    c = parse_sim_cluster(
        cluster_doc(
            {"name": "spare", "count": 0, "allocatable": {"cpu": "8"}},
            hyperNodes=[{"name": "s0", "tier": 1}],
            networkTopologyTypes={"net": [{"nodeLabel": "volcano.sh/tor"}]},
        )
    )
    assert c.nodes == ()
    assert c.hyper_nodes == ({"name": "s0", "tier": 1},)
    assert c.discovery == {"networkTopologyTypes": {"net": [{"nodeLabel": "volcano.sh/tor"}]}}


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        (cluster_doc({"name": "a", "count": -1}), "spec.nodeGroups[0].count", "must be >= 0"),
        (cluster_doc({"name": "a"}, {"name": "a"}), "spec.nodeGroups[1].name", 'duplicate node group "a"'),
        (cluster_doc({"name": "A_1"}), "spec.nodeGroups[0].name", "invalid name"),
        (cluster_doc({"count": 1}), "spec.nodeGroups[0].name", "required"),
        (
            cluster_doc({"name": "a", "allocatable": {"cpu": "many"}}),
            "spec.nodeGroups[0].allocatable.cpu",
            "invalid",
        ),
        (
            cluster_doc({"name": "a", "allocatable": {"nvidia.com/gpu": "4"}, "gpus": {"count": 8}}),
            "spec.nodeGroups[0].gpus.count",
            "allocatable nvidia.com/gpu is 4",
        ),
        (
            cluster_doc({"name": "a", "taints": [{"key": "k", "effect": "Sometimes"}]}),
            "spec.nodeGroups[0].taints[0].effect",
            "NoSchedule",
        ),
        (cluster_doc({"name": "a", "count": "2"}), "spec.nodeGroups[0].count", "must be an integer"),
        ({**cluster_doc(), "metadata": {}}, "metadata.name", "required"),
    ],
)
def test_validation_names_the_field(doc: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_sim_cluster(doc)
    assert info.value.field == field, info.value.problems
    assert message in info.value.message
