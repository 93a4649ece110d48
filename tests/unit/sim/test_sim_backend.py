"""The sim backend: pods run for their annotated duration, exit with their code, hold capacity."""

from __future__ import annotations

from typing import Any

import pytest

from vglobal.agent.backends.sim import SimBackend
from vglobal.agent.backends.sim_cluster import parse_sim_cluster
from vglobal.agent.pods import PodManifest, PodPhase
from vglobal.model.resources import ResourceVector

CLUSTER = {
    "apiVersion": "vglobal.io/v1alpha1",
    "kind": "SimCluster",
    "metadata": {"name": "c1", "labels": {"region": "east"}},
    "spec": {
        "nodeGroups": [
            {
                "name": "gpu",
                "count": 2,
                "allocatable": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "4"},
                "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
            },
        ]
    },
}


def backend() -> SimBackend:
    return SimBackend(parse_sim_cluster(CLUSTER))


def pod(
    uid: str, annotations: dict[str, str] | None = None, request: dict[str, str] | None = None
) -> PodManifest:
    req = ResourceVector.from_quantities(request or {"cpu": "1"})
    obj: dict[str, Any] = {"metadata": {"name": uid, "annotations": annotations or {}}, "spec": {}}
    return PodManifest(uid, uid, "default", "job", "t", 0, req, obj)


def test_nodes_from_the_sim_cluster() -> None:
    b = backend()
    assert [n.name for n in b.nodes()] == ["gpu-0", "gpu-1"]
    node = b.nodes()[0]
    assert node.allocatable["nvidia.com/gpu"] == 4000 and node.allocatable["pods"] == 110
    assert node.labels["kubernetes.io/hostname"] == "gpu-0"
    assert node.taints[0].key == "gpu" and node.taints[0].effect == "NoSchedule"
    assert b.cluster_name == "c1" and b.cluster_labels == {"region": "east"}


def test_free_capacity_counts_requests_and_a_pod_slot() -> None:
    b = backend()
    b.create_pod(pod("p1", request={"cpu": "3", "nvidia.com/gpu": "2"}))
    assert b.free()["gpu-0"] == b.nodes()[0].allocatable  # pending pods hold nothing
    b.bind_pod("p1", "gpu-0")
    free = b.free()["gpu-0"]
    assert (free["cpu"], free["nvidia.com/gpu"], free["pods"]) == (5000, 2000, 109)
    assert b.free()["gpu-1"] == b.nodes()[1].allocatable
    b.delete_pod("p1")
    assert b.free()["gpu-0"] == b.nodes()[0].allocatable


@pytest.mark.parametrize(
    "annotations,phase,code,end",
    [
        ({"vglobal.io/sim-duration": "3s"}, PodPhase.Succeeded, 0, 13.0),
        ({"vglobal.io/sim-duration": "2m", "vglobal.io/sim-exit-code": "137"}, PodPhase.Failed, 137, 130.0),
        ({"vglobal.io/sim-duration": "1m30s", "vglobal.io/sim-exit-code": "0"}, PodPhase.Succeeded, 0, 100.0),
    ],
)
def test_duration_and_exit_code(annotations: dict[str, str], phase: PodPhase, code: int, end: float) -> None:
    b = backend()
    b.advance(10.0)
    b.create_pod(pod("p", annotations))
    b.bind_pod("p", "gpu-1")
    assert b.pods()["p"].phase == PodPhase.Running and b.pods()["p"].started == 10.0
    assert b.next_event_time() == end
    b.advance(end - 0.001)
    assert b.pods()["p"].phase == PodPhase.Running
    b.advance(end)
    st = b.pods()["p"]
    assert (st.phase, st.exit_code, st.finished, st.node) == (phase, code, end, "gpu-1")
    assert b.free()["gpu-1"] == b.nodes()[1].allocatable  # a finished pod releases its node
    assert b.next_event_time() is None


def test_pod_without_duration_runs_forever() -> None:
    b = backend()
    b.create_pod(pod("p"))
    b.bind_pod("p", "gpu-0")
    b.advance(1e9)
    assert b.pods()["p"].phase == PodPhase.Running
    assert b.next_event_time() is None


def test_deleted_pod_never_ends_and_releases_capacity() -> None:
    b = backend()
    b.create_pod(pod("p", {"vglobal.io/sim-duration": "5s"}))
    b.bind_pod("p", "gpu-0")
    b.delete_pod("p")
    b.delete_pod("p")  # a second delete is harmless
    assert b.next_event_time() is None
    b.advance(10)
    assert b.pods() == {}
    assert b.free()["gpu-0"] == b.nodes()[0].allocatable


def test_bind_errors() -> None:
    b = backend()
    b.create_pod(pod("p"))
    with pytest.raises(ValueError, match="no node"):
        b.bind_pod("p", "nope")
    b.bind_pod("p", "gpu-0")
    with pytest.raises(ValueError, match="already"):
        b.bind_pod("p", "gpu-1")
    with pytest.raises(ValueError, match="exists"):
        b.create_pod(pod("p"))
