"""The claims the kube agent writes for DRA pods: in the resource.k8s.io version the cluster serves."""

from __future__ import annotations

from vglobal.agent.kube.claims import as_version


def test_a_claim_is_written_in_the_version_the_cluster_serves() -> None:
    beta = {"devices": {"requests": [{"name": "g", "deviceClassName": "gpu.example.com", "count": 2}]}}
    v1 = {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}]}}
    assert as_version(beta, "resource.k8s.io/v1") == v1
    assert as_version(v1, "resource.k8s.io/v1beta1") == beta
    assert as_version(v1, "resource.k8s.io/v1") == v1
