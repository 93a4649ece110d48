"""The emulator's REST semantics as the official client sees them: auth, discovery, CRUD, errors,
preconditions, patches, subresources."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.kubeapi import KubeApiEmulator, api_client, write_kubeconfig
from tests.kubeapi.testkit import binding, pod_body


def body(e: ApiException) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(e.body)
    return out


@pytest.fixture
def core(kube_api: KubeApiEmulator) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api.api_client())


def test_the_bearer_token_from_the_kubeconfig_is_required(kube_api: KubeApiEmulator, tmp_path: Any) -> None:
    bad = write_kubeconfig(tmp_path / "bad", kube_api.url, "wrong-token", "bad")
    with pytest.raises(ApiException) as e:
        client.CoreV1Api(api_client(bad)).list_namespace()
    assert e.value.status == 401 and body(e.value)["reason"] == "Unauthorized"
    names = [n.metadata.name for n in client.CoreV1Api(kube_api.api_client()).list_namespace().items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    assert kube_api.requests(code=401)


def test_discovery_tells_whether_the_hypernode_crd_is_installed(kube_api: KubeApiEmulator) -> None:
    c = kube_api.api_client()
    groups = {g.name for g in client.ApisApi(c).get_api_versions().groups}
    assert {"coordination.k8s.io", "events.k8s.io", "topology.volcano.sh"} <= groups
    resources = client.CustomObjectsApi(c).get_api_resources("topology.volcano.sh", "v1alpha1")
    assert [r.name for r in resources.resources] == ["hypernodes", "hypernodes/status"]
    core_names = {r.name for r in client.CoreV1Api(c).get_api_resources().resources}
    assert {"pods", "pods/binding", "pods/status", "pods/eviction", "nodes", "nodes/status"} <= core_names
    hn = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "tor-0"},
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "node-0"}}}]},
    }
    custom = client.CustomObjectsApi(c)
    custom.create_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes", hn)

    kube_api.set_hypernode_crd(False)
    assert "topology.volcano.sh" not in {g.name for g in client.ApisApi(c).get_api_versions().groups}
    with pytest.raises(ApiException) as e:
        custom.list_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes")
    assert e.value.status == 404
    kube_api.set_hypernode_crd(True)
    listed = custom.list_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes")
    assert listed["items"] == []  # removing the CRD removed its objects, as on a cluster
    crd = client.ApiextensionsV1Api(c).read_custom_resource_definition("hypernodes.topology.volcano.sh")
    assert crd.spec.scope == "Cluster"


def test_create_get_list_and_the_global_resource_version(core: client.CoreV1Api) -> None:
    before = int(core.list_namespaced_pod("default").metadata.resource_version)
    a = core.create_namespaced_pod("default", pod_body("a", labels={"app": "x"}))
    b = core.create_namespaced_config_map(
        "default", {"metadata": {"generateName": "cm-"}, "data": {"k": "v"}}
    )
    assert int(a.metadata.resource_version) > before
    assert int(b.metadata.resource_version) > int(a.metadata.resource_version)
    assert b.metadata.name.startswith("cm-") and len(b.metadata.name) == 8
    assert a.spec.scheduler_name == "vglobal" and a.status.phase == "Pending" and a.metadata.uid
    listed = core.list_namespaced_pod("default")
    assert int(listed.metadata.resource_version) == int(b.metadata.resource_version)
    assert core.read_namespaced_pod("a", "default").metadata.uid == a.metadata.uid


def test_errors_carry_the_apiservers_status_bodies(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_body("a"))
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("default", pod_body("a"))
    assert e.value.status == 409
    assert body(e.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "a" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "a", "kind": "pods"},
        "code": 409,
    }
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("missing", pod_body("a"))
    assert e.value.status == 404 and body(e.value)["message"] == 'namespaces "missing" not found'
    with pytest.raises(ApiException) as e:
        core.read_namespaced_config_map("nope", "default")
    assert e.value.status == 404 and body(e.value)["details"] == {"name": "nope", "kind": "configmaps"}
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("default", {"metadata": {"name": "Bad_Name"}, "spec": {"containers": []}})
    assert e.value.status == 422 and body(e.value)["reason"] == "Invalid"
    assert "metadata.name" in body(e.value)["message"]
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod(
            "default", {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c"}]}}
        )
    assert body(e.value)["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].image"}
    ]
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod(
            "default", {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "Main_C", "image": "i"}]}}
        )
    assert (
        e.value.status == 422
        and 'spec.containers[0].name: Invalid value: "Main_C"' in body(e.value)["message"]
    )
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert e.value.status == 400 and body(e.value)["message"] == "field label not supported: spec.bogus"


def test_a_stale_resource_version_is_a_conflict(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"n": "1"}})
    cm.data = {"n": "2"}
    updated = core.replace_namespaced_config_map("c", "default", cm)
    assert updated.data == {"n": "2"}
    cm.data = {"n": "3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as e:
        core.replace_namespaced_config_map("c", "default", cm)
    assert e.value.status == 409 and body(e.value)["reason"] == "Conflict"
    assert "the object has been modified" in body(e.value)["message"]
    assert core.read_namespaced_config_map("c", "default").data == {"n": "2"}
    same = core.replace_namespaced_config_map("c", "default", updated)
    assert same.metadata.resource_version == updated.metadata.resource_version  # a no-op write bumps nothing


def test_patches_status_and_immutable_pod_spec(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_body("p"))
    # a dict body goes as a strategic merge patch: conditions merge by type
    core.patch_namespaced_pod_status(
        "p",
        "default",
        {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}},
    )
    core.patch_namespaced_pod_status(
        "p", "default", {"status": {"conditions": [{"type": "Custom", "status": "True"}]}}
    )
    pod = core.read_namespaced_pod("p", "default")
    assert {c.type: c.status for c in pod.status.conditions} == {"PodScheduled": "False", "Custom": "True"}
    # a status write ignores metadata; a main write ignores status
    core.patch_namespaced_pod_status(
        "p", "default", {"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Running"}}
    )
    core.patch_namespaced_pod(
        "p", "default", {"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Failed"}}
    )
    pod = core.read_namespaced_pod("p", "default")
    assert pod.status.phase == "Running" and pod.metadata.labels == {"a": "b"}
    # a list body goes as a JSON patch
    core.patch_namespaced_pod(
        "p", "default", [{"op": "add", "path": "/metadata/annotations/k", "value": "v"}]
    )
    assert core.read_namespaced_pod("p", "default").metadata.annotations["k"] == "v"
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_pod("p", "default", {"spec": {"nodeName": "node-0"}})
    assert e.value.status == 422 and "pod updates may not change fields" in body(e.value)["message"]
    assert core.read_namespaced_pod("p", "default").spec.node_name is None


def test_binding_sets_the_node_once_and_merges_annotations(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_body("p"))
    resp = core.create_namespaced_pod_binding(
        "p", "default", binding("p", "node-1", {"volcano.sh/x": "1"}), _preload_content=False
    )
    assert resp.status == 201
    assert json.loads(resp.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    pod = core.read_namespaced_pod("p", "default")
    assert pod.spec.node_name == "node-1" and pod.metadata.annotations["volcano.sh/x"] == "1"
    assert [(c.type, c.status) for c in pod.status.conditions if c.type == "PodScheduled"] == [
        ("PodScheduled", "True")
    ]
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod_binding("p", "default", binding("p", "node-2"), _preload_content=False)
    assert e.value.status == 409
    assert body(e.value)["message"] == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "node-1"'
    )
    assert core.read_namespaced_pod("p", "default").spec.node_name == "node-1"
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod_binding(
            "nope", "default", binding("nope", "node-2"), _preload_content=False
        )
    assert e.value.status == 404


def test_custom_objects_need_a_resource_version_and_take_merge_patches(kube_api: KubeApiEmulator) -> None:
    custom = client.CustomObjectsApi(kube_api.api_client())
    args = ("topology.volcano.sh", "v1alpha1", "hypernodes")
    custom.create_cluster_custom_object(
        *args,
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "s0"},
            "spec": {"tier": 2, "members": []},
        },
    )
    obj = custom.patch_cluster_custom_object(*args, "s0", {"spec": {"tier": 3}})
    assert obj["spec"] == {"tier": 3, "members": []}
    stale = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}}
    with pytest.raises(ApiException) as e:
        custom.replace_cluster_custom_object(*args, "s0", stale)
    assert e.value.status == 409


def test_leases_events_and_hypernode_watches(kube_api: KubeApiEmulator) -> None:
    c = kube_api.api_client()
    coord = client.CoordinationV1Api(c)
    lease = coord.create_namespaced_lease(
        "kube-system",
        {"metadata": {"name": "vglobal-agent"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}},
    )
    lease.spec.holder_identity = "b"
    coord.replace_namespaced_lease("vglobal-agent", "kube-system", lease)
    lease.spec.holder_identity = "c"  # the loser of a race still holds the old resourceVersion
    with pytest.raises(ApiException) as e:
        coord.replace_namespaced_lease("vglobal-agent", "kube-system", lease)
    assert e.value.status == 409
    assert coord.read_namespaced_lease("vglobal-agent", "kube-system").spec.holder_identity == "b"
    ev = client.EventsV1Api(c).create_namespaced_event(
        "default",
        {
            "metadata": {"generateName": "job-"},
            "eventTime": "2025-01-01T00:00:00.000000Z",
            "reason": "Started",
            "action": "Run",
            "reportingController": "vglobal.io/agent",
            "reportingInstance": "x",
            "type": "Normal",
            "note": "hello",
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        },
    )
    assert ev.note == "hello"
    core_ev = client.CoreV1Api(c).create_namespaced_event(
        "default",
        {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Failed"},
    )
    assert core_ev.reason == "Failed"
    listed = client.CoreV1Api(c).list_namespaced_event(
        "default", field_selector="involvedObject.name=p,reason=Failed"
    )
    assert [x.metadata.name for x in listed.items] == ["e1"]
    custom = client.CustomObjectsApi(c)
    args = ("topology.volcano.sh", "v1alpha1", "hypernodes")
    rv = custom.list_cluster_custom_object(*args)["metadata"]["resourceVersion"]
    custom.create_cluster_custom_object(
        *args,
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "s1"},
            "spec": {"tier": 1, "members": []},
        },
    )
    events = list(
        watch.Watch().stream(custom.list_cluster_custom_object, *args, resource_version=rv, timeout_seconds=1)
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "s1")]
