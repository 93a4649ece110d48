"""The kube agent's node pools: the --node-pools file, the pools as reported from the cluster's
labelled nodes, the ProvisioningRequest a waiting gang asks for, and the scheduling gate used where
the cluster serves none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vglobal.agent.kube.api import ApiError
from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.pools import GATE, NodePools, load_pools, parse_pools
from vglobal.agent.kube.records import node_record
from vglobal.agent.kube.writer import Op, Outcome
from vglobal.agent.pods import PodManifest
from vglobal.model.resources import ResourceVector

FILE = """
pools:
- name: gpu
  max: 4
  provisionDelay: 90s
  allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
  labels: {node.kubernetes.io/instance-type: p4d.24xlarge}
- {name: cpu, max: 10, allocatable: {cpu: "16", memory: 64Gi}}
"""
REF = JobRef("0123456789abcdef", 2, "team", "pretrain")


def _node(name: str, labels: dict[str, str]) -> Any:
    return node_record(
        {
            "metadata": {"name": name, "labels": labels},
            "status": {
                "allocatable": {"cpu": "32", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def test_the_file_gives_each_pools_shape_max_and_delay(tmp_path: Path) -> None:
    (path := tmp_path / "pools.yaml").write_text(FILE)
    gpu, cpu = load_pools(path)
    assert (gpu.name, gpu.max, gpu.provision_seconds) == ("gpu", 4, 90.0)
    assert gpu.node.spec.allocatable == ResourceVector.from_quantities(
        {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}  # pods as a kubelet's default
    )
    assert gpu.node.spec.labels == {"node.kubernetes.io/instance-type": "p4d.24xlarge"}
    assert (cpu.max, cpu.provision_seconds) == (10, 0.0)


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        ({}, "expected a list under pools"),
        ({"pools": [{"max": 1, "allocatable": {"cpu": "1"}}]}, "pools[0].name: required"),
        (
            {"pools": [{"name": "a", "max": -1, "allocatable": {"cpu": "1"}}]},
            "pools[0].max: must be an integer",
        ),
        ({"pools": [{"name": "a", "max": 1}]}, "pools[0].allocatable: required"),
        ({"pools": [{"name": "a", "max": 1, "allocatable": {"cpu": "lots"}}]}, "pools[0].allocatable:"),
        (
            {"pools": [{"name": "a", "max": 1, "allocatable": {"cpu": "1"}, "provisionDelay": "soon"}]},
            "provisionDelay",
        ),
        (
            {"pools": [{"name": "a", "max": 1, "allocatable": {"cpu": "1"}, "size": 3}]},
            "pools[0].size: unknown",
        ),
        (
            {"pools": [{"name": "a", "max": 1, "allocatable": {"cpu": "1"}}] * 2},
            'pools[1].name: duplicate pool "a"',
        ),
    ],
)
def test_a_bad_file_names_the_field(doc: Any, error: str) -> None:
    with pytest.raises(ValueError, match=r"^f\.yaml: ") as info:
        parse_pools(doc, "f.yaml")
    assert error in str(info.value)


def test_a_pools_nodes_are_those_labelled_with_its_name_and_coming_ones_count_until_up() -> None:
    sent: list[Op] = []
    pools = NodePools(
        parse_pools({"pools": [{"name": "gpu", "max": 4, "allocatable": {"cpu": "32"}}]}, "f"), sent.append
    )
    nodes = {
        "a": _node("a", {"karpenter.sh/nodepool": "gpu"}),
        "b": _node("b", {"vglobal.io/node-pool": "gpu"}),
        "c": _node("c", {"vglobal.io/node-pool": "other"}),
        "d": _node("d", {}),
    }
    (spec,) = pools.specs(nodes)
    assert (spec.current, spec.max, spec.coming) == (2, 4, 0)
    pools.grow("gpu", 2, spec.current, "run-1")
    (spec,) = pools.specs(nodes)
    assert (spec.current, spec.coming) == (2, 2)
    nodes["e"] = _node("e", {"karpenter.sh/nodepool": "gpu"})
    (spec,) = pools.specs(nodes)
    assert (spec.current, spec.coming) == (3, 1)
    pools.grow("gpu", 1, spec.current, "run-2")  # after the node still coming for run-1
    assert pools.specs(nodes)[0].coming == 2
    pools.remove("run-1")  # handed back: the nodes it asked for are not counted on any more
    assert pools.specs(nodes)[0].coming == 2
    pools.remove("run-2")
    assert pools.specs(nodes)[0].coming == 0
    with pytest.raises(ValueError, match='no node pool "cpu"'):
        pools.grow("cpu", 1, 0)


def _pod(task: str, index: int) -> PodManifest:
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}
    return PodManifest(
        uid=f"p-{task}-{index}",
        name=f"pretrain-{task}-{index}",
        namespace="team",
        job_uid=REF.uid,
        task=task,
        index=index,
        request=ResourceVector.from_quantities({"nvidia.com/gpu": "8"}),
        obj={"metadata": {"name": f"pretrain-{task}-{index}"}, "spec": {**spec, "schedulerName": "vglobal"}},
    )


def test_a_waiting_gang_asks_for_a_provisioning_request_with_a_pod_template_per_task_once() -> None:
    sent: list[Op] = []
    pools = NodePools(
        parse_pools({"pools": [{"name": "gpu", "max": 4, "allocatable": {"cpu": "32"}}]}, "f"), sent.append
    )
    pools.requests = True
    waiting = [_pod("w", 0), _pod("w", 1), _pod("ps", 0)]
    pools.request(REF, "owner-uid", waiting)
    pools.request(REF, "owner-uid", waiting)  # another pool of the same gang: one request covers it
    assert [o.kind for o in sent] == ["pool-template", "pool-template"]  # the request once they exist
    pools.on_outcome(Outcome(sent[0], result={}))
    pools.on_outcome(Outcome(sent[1], error=ApiError(409, "AlreadyExists", "exists")))
    templates, (request,) = (
        [o for o in sent if o.kind == "pool-template"],
        [o for o in sent if o.kind == "pool-request"],
    )
    assert [t.body["metadata"]["name"] for t in templates] == [
        "pretrain-01234567-g2-0",
        "pretrain-01234567-g2-1",
    ]
    assert templates[0].path == "/api/v1/namespaces/team/podtemplates"
    assert templates[0].body["template"]["spec"] == {"containers": waiting[0].obj["spec"]["containers"]}
    assert request.path == "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/team/provisioningrequests"
    assert request.body["spec"] == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "podSets": [
            {"count": 1, "podTemplateRef": {"name": "pretrain-01234567-g2-0"}},  # ps
            {"count": 2, "podTemplateRef": {"name": "pretrain-01234567-g2-1"}},  # w
        ],
    }
    assert request.body["metadata"]["ownerReferences"][0]["uid"] == "owner-uid"
    sent.clear()
    pools.remove(REF.uid)  # handed back or gone: the request and its templates are deleted
    assert sorted((o.method, o.path.rsplit("/", 1)[-1]) for o in sent) == [
        ("DELETE", "pretrain-01234567-g2"),
        ("DELETE", "pretrain-01234567-g2-0"),
        ("DELETE", "pretrain-01234567-g2-1"),
    ]
    assert pools.ungate("team", "p") is None and pools.gate({"spec": {}}) == {"spec": {}}


def test_without_provisioning_requests_pods_are_gated_and_the_gate_is_lifted_before_the_bind() -> None:
    sent: list[Op] = []
    pools = NodePools(
        parse_pools({"pools": [{"name": "gpu", "max": 4, "allocatable": {"cpu": "32"}}]}, "f"), sent.append
    )
    pools.request(REF, "owner-uid", [_pod("w", 0)])
    assert sent == []  # the gated pods are what the autoscaler sees
    body = pools.gate({"kind": "Pod", "spec": {"schedulerName": "vglobal"}})
    assert body["spec"] == {"schedulerName": "vglobal", "schedulingGates": [{"name": GATE}]}
    assert pools.ungate("team", "p") == (
        "PATCH",
        "/api/v1/namespaces/team/pods/p",
        {"spec": {"schedulingGates": None}},
    )
    no_pools = NodePools((), sent.append)
    assert no_pools.gate({"spec": {}}) == {"spec": {}} and no_pools.ungate("team", "p") is None


def test_a_workload_kinds_pods_are_neither_gated_nor_asked_for_and_its_event_says_so() -> None:
    pools = NodePools(parse_pools({"pools": [{"name": "gpu", "max": 4, "allocatable": {"cpu": "32"}}]}, "f"), [].append)
    note = pools.unasked("RayCluster")
    assert note.startswith("the agent asks no nodes for the pods of a RayCluster (no ProvisioningRequest"), note
    assert NodePools((), [].append).unasked("RayCluster") == ""


def test_a_failed_request_hands_its_run_back_once_and_other_requests_are_ignored() -> None:
    from vglobal.agent.kube.informer import Change
    from vglobal.agent.kube.pools import request_record

    pools = NodePools(
        parse_pools({"pools": [{"name": "gpu", "max": 4, "allocatable": {"cpu": "32"}}]}, "f"), [].append
    )
    pools.requests = True
    pools.request(REF, "owner-uid", [_pod("w", 0)])

    def pr(name: str, uid: str, failed: bool) -> Any:
        conditions = [
            {"type": "Failed", "status": "True", "reason": "NotProvisioned", "message": "no capacity"}
        ]
        meta = {"name": name, "namespace": "team", "labels": {"vglobal.io/job-uid": uid}}
        return request_record({"metadata": meta, "status": {"conditions": conditions if failed else []}})

    mine = pr("pretrain-01234567-g2", REF.uid, True)
    assert (
        pools.on_change(Change("provisioningrequests", "upsert", pr("pretrain-01234567-g2", REF.uid, False)))
        == []
    )
    assert pools.on_change(Change("provisioningrequests", "upsert", pr("other", "someone-else", True))) == []
    (problem,) = pools.on_change(Change("provisioningrequests", "replace", items=(mine,)))
    assert (problem.job_uid, problem.action, problem.reason) == (REF.uid, "reject", "FailedScaleUp")
    assert problem.message == (
        "the cluster cannot add the nodes of its gang (ProvisioningRequest pretrain-01234567-g2: no capacity)"
    )
    assert pools.on_change(Change("provisioningrequests", "upsert", mine)) == []  # told once
