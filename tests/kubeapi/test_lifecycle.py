"""Pods through the fake kubelet, graceful deletion, owner-reference garbage collection, namespaces."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.kubeapi import KubeApiEmulator
from tests.kubeapi.testkit import binding, owner_ref, pod_body, wait_until


@pytest.fixture
def core(kube_api: KubeApiEmulator) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api.api_client())


def bind(core: client.CoreV1Api, name: str, node: str, namespace: str = "default") -> None:
    core.create_namespaced_pod_binding(name, namespace, binding(name, node), _preload_content=False)


def phase(core: client.CoreV1Api, name: str, namespace: str = "default") -> str:
    return str(core.read_namespaced_pod(name, namespace).status.phase)


def gone(core: client.CoreV1Api, name: str, namespace: str = "default") -> bool:
    try:
        core.read_namespaced_pod(name, namespace)
    except ApiException as e:
        return e.status == 404
    return False


def test_bound_pods_run_and_finish_with_the_annotated_exit_code(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_body("ok", duration="200ms"))
    core.create_namespaced_pod("default", pod_body("bad", duration="200ms", exit_code=3))
    core.create_namespaced_pod("default", pod_body("idle"))
    for name in ("ok", "bad", "idle"):
        bind(core, name, "node-0")
    running = wait_until(
        lambda: (p := core.read_namespaced_pod("idle", "default")).status.phase == "Running" and p
    )
    assert running.status.container_statuses[0].state.running.started_at is not None
    assert running.status.host_ip == "10.0.0.1" and running.status.pod_ip
    wait_until(lambda: phase(core, "ok") == "Succeeded" and phase(core, "bad") == "Failed")
    ok = core.read_namespaced_pod("ok", "default").status.container_statuses[0].state.terminated
    bad = core.read_namespaced_pod("bad", "default").status.container_statuses[0].state.terminated
    assert (ok.exit_code, ok.reason, bad.exit_code, bad.reason) == (0, "Completed", 3, "Error")
    assert phase(core, "idle") == "Running"  # no duration: runs until deleted


def test_unbound_pods_stay_pending(kube_api: KubeApiEmulator, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_body("waiting", duration="10ms"))
    core.create_namespaced_pod("default", pod_body("bound", duration="10ms"))
    bind(core, "bound", "node-1")
    wait_until(lambda: phase(core, "bound") == "Succeeded")
    assert phase(core, "waiting") == "Pending"


def test_restart_policy_on_failure_restarts_the_container(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(
        "default", pod_body("flaky", duration="100ms", exit_code=1, restart="OnFailure")
    )
    bind(core, "flaky", "node-0")
    cs = wait_until(
        lambda: (
            (s := core.read_namespaced_pod("flaky", "default").status.container_statuses)
            and s[0].restart_count >= 2
            and s[0]
        )
    )
    assert cs.last_state.terminated.exit_code == 1
    assert phase(core, "flaky") == "Running"


def test_graceful_delete_is_finished_by_the_kubelet(
    kube_api: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod_body("p"))
    core.create_namespaced_pod("default", pod_body("never-bound"))
    bind(core, "p", "node-0")
    wait_until(lambda: phase(core, "p") == "Running")
    kube_api.set_kubelet(False)  # hold the kubelet so the Terminating state can be seen
    deleted = core.delete_namespaced_pod("p", "default", grace_period_seconds=5)
    assert (
        deleted.metadata.deletion_timestamp is not None
        and deleted.metadata.deletion_grace_period_seconds == 5
    )
    assert core.read_namespaced_pod("p", "default").metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as e:  # a pod being deleted takes no binding
        core.create_namespaced_pod_binding("p", "default", binding("p", "node-1"), _preload_content=False)
    assert json.loads(e.value.body)["message"].endswith(
        "pod p is being deleted, cannot be assigned to a host"
    )
    core.delete_namespaced_pod("never-bound", "default")  # no kubelet runs it: it goes at once
    assert gone(core, "never-bound")
    kube_api.set_kubelet(True)
    wait_until(lambda: gone(core, "p"), what="the kubelet to finish the deletion")


def test_grace_period_zero_deletes_at_once(kube_api: KubeApiEmulator, core: client.CoreV1Api) -> None:
    kube_api.set_kubelet(False)
    core.create_namespaced_pod("default", pod_body("p", node="node-2"))
    core.delete_namespaced_pod("p", "default")
    assert not gone(core, "p")
    core.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    assert gone(core, "p")


def test_deleting_an_owner_removes_its_dependents_of_every_kind(core: client.CoreV1Api) -> None:
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "job-a"}})
    other = core.create_namespaced_config_map("default", {"metadata": {"name": "job-b"}})
    ref = owner_ref(owner)
    core.create_namespaced_pod("default", pod_body("a-0", owner=owner))
    core.create_namespaced_pod("default", pod_body("a-1", owner=owner))
    bind(core, "a-1", "node-0")
    core.create_namespaced_service(
        "default",
        {
            "metadata": {"name": "a", "ownerReferences": [ref]},
            "spec": {"clusterIP": "None", "ports": [{"port": 80}]},
        },
    )
    core.create_namespaced_pod("default", pod_body("b-0", owner=other))
    wait_until(lambda: phase(core, "a-1") == "Running")
    core.delete_namespaced_config_map("job-a", "default")
    wait_until(lambda: gone(core, "a-0") and gone(core, "a-1"), what="the pods of job-a to go")
    with pytest.raises(ApiException):
        core.read_namespaced_service("a", "default")
    assert core.read_namespaced_pod("b-0", "default").metadata.name == "b-0"


def test_orphan_and_foreground_propagation(core: client.CoreV1Api) -> None:
    keep = core.create_namespaced_config_map("default", {"metadata": {"name": "keep"}})
    core.create_namespaced_pod("default", pod_body("orphan", owner=keep))
    core.delete_namespaced_config_map("keep", "default", propagation_policy="Orphan")
    assert core.read_namespaced_pod("orphan", "default").metadata.owner_references is None
    fg = core.create_namespaced_config_map("default", {"metadata": {"name": "fg"}})
    core.create_namespaced_pod("default", pod_body("child", owner=fg, node="node-0"))
    wait_until(lambda: phase(core, "child") == "Running")
    core.delete_namespaced_config_map("fg", "default", propagation_policy="Foreground")
    wait_until(lambda: gone(core, "child"))
    with pytest.raises(ApiException):
        wait_until(lambda: core.read_namespaced_config_map("fg", "default") and None, timeout=2)


def test_a_dependent_whose_owner_never_existed_is_collected(core: client.CoreV1Api) -> None:
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "uid": "no-such-uid"}}
    core.create_namespaced_pod("default", pod_body("stray", owner=ghost))
    wait_until(lambda: gone(core, "stray"))


def test_a_deleted_namespace_empties_then_goes(kube_api: KubeApiEmulator, core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_pod("team", pod_body("p", node="node-3"))
    core.create_namespaced_config_map("team", {"metadata": {"name": "c"}})
    wait_until(lambda: phase(core, "p", "team") == "Running")
    kube_api.set_kubelet(False)  # the running pod's graceful deletion holds the namespace
    ns: Any = core.delete_namespace(
        "team"
    )  # the apiserver answers with the Namespace, the client's model is a Status
    assert ns["status"]["phase"] == "Terminating"
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("team", {"metadata": {"name": "late"}})
    assert e.value.status == 403 and "is being terminated" in json.loads(e.value.body)["message"]
    wait_until(lambda: [c.metadata.name for c in core.list_namespaced_config_map("team").items] == [])
    assert core.read_namespace("team").status.phase == "Terminating"
    kube_api.set_kubelet(True)
    wait_until(lambda: "team" not in [n.metadata.name for n in core.list_namespace().items])
    assert core.list_namespaced_pod("team").items == []


def test_not_ready_nodes_eviction_and_oom(kube_api: KubeApiEmulator, core: client.CoreV1Api) -> None:
    node = kube_api.set_node_ready("node-1", False)
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "False"
    read = core.read_node("node-1")
    assert [t.key for t in read.spec.taints] == ["node.kubernetes.io/not-ready"]
    core.create_namespaced_pod("default", pod_body("stuck", duration="10ms", node="node-1"))
    core.create_namespaced_pod("default", pod_body("fine", duration="10ms", node="node-2"))
    wait_until(lambda: phase(core, "fine") == "Succeeded")
    assert phase(core, "stuck") == "Pending"  # no kubelet on a NotReady node
    kube_api.set_node_ready("node-1", True)
    wait_until(lambda: phase(core, "stuck") == "Succeeded")
    core.create_namespaced_pod("default", pod_body("victim", node="node-1"))
    core.create_namespaced_pod("default", pod_body("hog", node="node-2"))
    wait_until(lambda: phase(core, "victim") == "Running" and phase(core, "hog") == "Running")
    assert kube_api.evict_node("node-1") == 1
    evicted: Any = core.read_namespaced_pod("victim", "default").status
    assert (evicted.phase, evicted.reason) == ("Failed", "Evicted")
    kube_api.oom_kill("default", "hog")
    term = core.read_namespaced_pod("hog", "default").status.container_statuses[0].state.terminated
    assert (phase(core, "hog"), term.reason, term.exit_code) == ("Failed", "OOMKilled", 137)


def test_the_eviction_subresource_deletes_gracefully(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_body("p", node="node-0"))
    wait_until(lambda: phase(core, "p") == "Running")
    core.create_namespaced_pod_eviction(
        "p",
        "default",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "default"}},
    )
    wait_until(lambda: gone(core, "p"))
