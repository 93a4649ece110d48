"""The claims the kube agent writes for DRA pods: in the resource.k8s.io version the cluster serves."""

from __future__ import annotations

from vglobal.agent.kube.cache import ClusterCache
from vglobal.agent.kube.claims import ClaimWriter, as_version
from vglobal.agent.kube.dra import claim_record, class_record, slice_record
from vglobal.agent.kube.writer import Op


def test_a_claim_is_written_in_the_version_the_cluster_serves() -> None:
    beta = {"devices": {"requests": [{"name": "g", "deviceClassName": "gpu.example.com", "count": 2}]}}
    v1 = {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}]}}
    assert as_version(beta, "resource.k8s.io/v1") == v1
    assert as_version(v1, "resource.k8s.io/v1beta1") == beta
    assert as_version(v1, "resource.k8s.io/v1") == v1


def test_a_claim_made_before_the_agent_restarted_is_allocated_at_bind() -> None:
    # a fresh writer (the agent restarted after making pod-0's claim): it knows the claim only
    # from the cluster, and still allocates it on the node the pod is bound to
    cache = ClusterCache(lambda before, after: None)
    cache.dra["deviceclasses"]["gpu.example.com"] = class_record(
        {"metadata": {"name": "gpu.example.com"}, "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}
    )
    cache.dra["resourceslices"]["s1"] = slice_record(
        {"metadata": {"name": "s1"}, "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1"}, "devices": [{"name": "g0"}, {"name": "g1"}, {"name": "g2"}]}}
    )
    made = {
        "metadata": {"namespace": "ns", "name": "pod-0-gpu"},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}]}},
    }
    cache.dra["resourceclaims"]["ns/pod-0-gpu"] = claim_record(made)
    ops: list[Op] = []
    writer = ClaimWriter(ops.append, cache, lambda: "/apis/resource.k8s.io/v1")
    writer.allocate("ns", "pod-0", {"resourceClaims": [{"name": "gpu", "resourceClaimName": "pod-0-gpu"}]}, "n1", "k")
    assert [op.kind for op in ops] == ["allocate-claim"]
    results = ops[0].body["status"]["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == ["g0", "g1"]
    # once allocated (as the informer then shows it), a second bind does not allocate it again
    cache.dra["resourceclaims"]["ns/pod-0-gpu"] = claim_record({**made, "status": {"allocation": {"devices": {"results": results}}}})
    writer.allocate("ns", "pod-0", {"resourceClaims": [{"name": "gpu", "resourceClaimName": "pod-0-gpu"}]}, "n1", "k")
    assert len(ops) == 1
