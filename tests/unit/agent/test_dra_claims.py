"""The claims the kube agent writes for DRA pods: in the resource.k8s.io version the cluster serves."""

from __future__ import annotations

import json
from typing import Any

from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.cache import ClusterCache
from vglobal.agent.kube.claims import POD_CLAIM, ClaimWriter, as_version
from vglobal.agent.kube.dra import Want, claim_record, claimed, class_record, node_devices, pick, slice_record
from vglobal.agent.kube.writer import Op, Outcome
from vglobal.model.dra import CLAIMS_ANNOTATION
from vglobal.model.resources import ResourceVector


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


def _cache(devices: list[dict[str, Any]], driver: str = "gpu.example.com") -> ClusterCache:
    cache = ClusterCache(lambda before, after: None)
    cache.dra["deviceclasses"][driver] = class_record(
        {"metadata": {"name": driver}, "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}
    )
    cache.dra["resourceslices"]["s1"] = slice_record(
        {"metadata": {"name": "s1"}, "spec": {"driver": driver, "nodeName": "n1", "pool": {"name": "n1"}, "devices": devices}}
    )
    return cache


SHARED_GPU = {
    "name": "g0",
    "allowMultipleAllocations": True,
    "attributes": {"model": {"string": "h100"}},
    "capacity": {"memory": {"value": "80Gi"}},
}


def test_a_shared_device_reports_its_capacity_and_claims_take_shares_of_it() -> None:
    cache = _cache([SHARED_GPU, {"name": "g1", "attributes": {"model": {"string": "a100"}}}])
    slices, classes = cache.dra["resourceslices"].values(), cache.dra["deviceclasses"].values()
    mem = "deviceclass/gpu.example.com/memory"
    assert node_devices(slices, classes)["n1"] == ResourceVector({"deviceclass/gpu.example.com": 2000, mem: 80 * 2**30 * 1000})
    share = {"name": "m", "exactly": {"deviceClassName": "gpu.example.com", "capacity": {"requests": {"memory": "30Gi"}}}}
    ops: list[Op] = []
    writer = ClaimWriter(ops.append, cache, lambda: "/apis/resource.k8s.io/v1")
    for i in range(3):  # 30Gi + 30Gi fit in 80Gi, a third does not
        doc = {"metadata": {"namespace": "ns", "name": f"c{i}"}, "spec": {"devices": {"requests": [share]}}}
        cache.dra["resourceclaims"][f"ns/c{i}"] = claim_record(doc)
        writer.allocate("ns", "p", {"resourceClaims": [{"name": "x", "resourceClaimName": f"c{i}"}]}, "n1", "k")
    assert len(ops) == 2
    result = ops[0].body["status"]["allocation"]["devices"]["results"][0]
    assert result["device"] == "g0" and result["consumedCapacity"] == {"memory": str(30 * 2**30)} and result["shareID"]
    # the allocated shares, as the informer reads them back, leave 20Gi of the device's memory
    allocated = claim_record({"metadata": {"namespace": "ns", "name": "c0"}, "status": {"allocation": {"devices": {"results": [result, result]}}}})
    assert claimed(slices, classes, allocated.allocated, allocated.consumed)["n1"][mem] == 60 * 2**30 * 1000


def test_an_attribute_selector_picks_only_matching_devices() -> None:
    cache = _cache([{"name": "g0", "attributes": {"model": {"string": "a100"}}}, {"name": "g1", "attributes": {"gpu.example.com/model": {"string": "h100"}}}])
    slices, classes = cache.dra["resourceslices"].values(), cache.dra["deviceclasses"].values()
    h100 = Want("gpu.example.com", 1, (("gpu.example.com", "model", "h100"),))
    assert pick(slices, classes, "n1", h100, set()) == [("gpu.example.com", "n1", "g1")]
    assert pick(slices, classes, "n1", Want("gpu.example.com", 2, h100.selectors), set()) is None


def test_a_shared_claim_is_allocated_at_its_first_pods_bind_only() -> None:
    cache = _cache([{"name": "g0"}, {"name": "g1"}])
    ops: list[Op] = []
    writer = ClaimWriter(ops.append, cache, lambda: "/apis/resource.k8s.io/v1")
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }
    annotations = {CLAIMS_ANNOTATION: json.dumps([claim])}
    ref = JobRef(uid="u1", generation=1, namespace="ns", name="job")
    spec = {"resourceClaims": [{"name": "nic", "resourceClaimName": "shared"}], "containers": [{"name": "c"}]}
    for i in range(2):
        pod = {"metadata": {"name": f"job-w-{i}", "namespace": "ns"}, "spec": spec}
        assert writer.with_claims(pod, annotations, ref, "owner-uid") == pod  # it names the claim already
    assert [op.kind for op in ops] == ["create-claim"]  # once for the job
    for i in range(2):
        writer.allocate("ns", f"job-w-{i}", spec, "n1", f"pod-{i}")
    assert [op.kind for op in ops] == ["create-claim", "allocate-claim"]


def test_a_controller_made_pods_claim_is_made_named_in_its_status_and_allocated_once_created() -> None:
    cache = _cache([{"name": "g0"}])
    ops: list[Op] = []
    writer = ClaimWriter(ops.append, cache, lambda: "/apis/resource.k8s.io/v1")
    tpl = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
    }
    spec = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}
    writer.controller_pod("ns", "js-w-0", "pod-uid", spec, {CLAIMS_ANNOTATION: json.dumps([tpl])}, "n1", "k")
    assert [op.kind for op in ops] == [POD_CLAIM, "claim-status"]
    made = ops[0].body
    assert made["metadata"]["name"] == "js-w-0-gpu"
    assert made["metadata"]["ownerReferences"][0] == {"apiVersion": "v1", "kind": "Pod", "name": "js-w-0", "uid": "pod-uid", "controller": True}
    assert ops[1].path == "/api/v1/namespaces/ns/pods/js-w-0/status"
    assert ops[1].body == {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "js-w-0-gpu"}]}}
    writer.on_outcome(Outcome(ops[0], result=made))
    assert ops[2].kind == "allocate-claim" and ops[2].path.endswith("/resourceclaims/js-w-0-gpu/status")
    assert ops[2].body["status"]["allocation"]["devices"]["results"][0]["device"] == "g0"
