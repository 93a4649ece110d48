"""Fault knobs (429, 500, 403, pause, dropped streams), the request log, and the emulator as a process."""

from __future__ import annotations

import json
import time

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.kubeapi import EmulatorProcess, KubeApiEmulator
from tests.kubeapi.testkit import binding, pod_body, wait_until


@pytest.fixture
def core(kube_api: KubeApiEmulator) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api.api_client())


def test_429_carries_retry_after_and_stops_after_count(
    kube_api: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    kube_api.fail(429, count=1, method="POST", retry_after=2)
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("default", pod_body("p"))
    assert e.value.status == 429 and e.value.headers["Retry-After"] == "2"
    assert json.loads(e.value.body)["details"] == {"retryAfterSeconds": 2}
    assert core.list_namespaced_pod("default").items == []  # the refused create did nothing
    core.create_namespaced_pod("default", pod_body("p"))


def test_urllib3_retries_a_read_answered_429_with_retry_after(
    kube_api: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    """The client's urllib3 pool retries GET/PUT/DELETE on 429 + Retry-After up to 3 times by itself,
    then hands the last 429 to the client as an ApiException."""
    since = max((r["seq"] for r in kube_api.requests()), default=0)
    kube_api.fail(429, count=1, method="GET", retry_after=1)
    assert core.list_namespaced_pod("default").items == []
    assert [r["code"] for r in kube_api.requests(since, verb="list")] == [429, 200]
    since = max(r["seq"] for r in kube_api.requests())
    kube_api.fail(429, count=None, method="GET", retry_after=1)
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod("default")
    assert e.value.status == 429
    assert [r["code"] for r in kube_api.requests(since, verb="list")] == [429] * 4
    kube_api.clear_faults()
    core.list_namespaced_pod("default")


def test_500_and_403_for_a_path_pattern(kube_api: KubeApiEmulator, core: client.CoreV1Api) -> None:
    kube_api.fail(500, count=2, path=r"/pods/[^/]+/binding$")
    core.create_namespaced_pod("default", pod_body("p"))
    for _ in range(2):
        with pytest.raises(ApiException) as e:
            core.create_namespaced_pod_binding("p", "default", binding("p", "node-0"), _preload_content=False)
        assert e.value.status == 500 and json.loads(e.value.body)["reason"] == "InternalError"
    core.create_namespaced_pod_binding("p", "default", binding("p", "node-0"), _preload_content=False)
    kube_api.fail(403, count=None, path=r"/configmaps")
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert e.value.status == 403
    assert json.loads(e.value.body)["message"] == (
        'configmaps is forbidden: User "system:serviceaccount:default:emulated" cannot create resource '
        '"configmaps" in API group "" in the namespace "default"'
    )


def test_the_request_log_counts_by_verb_and_resource(
    kube_api: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    for i in range(3):
        core.create_namespaced_pod("default", pod_body(f"p{i}"))
        core.create_namespaced_pod_binding(
            f"p{i}", "default", binding(f"p{i}", "node-1"), _preload_content=False
        )
    counts = kube_api.counts()
    assert counts["create pods"] == 3 and counts["create pods/binding"] == 3
    creates = kube_api.requests(verb="create", resource="pods")
    assert [r["path"] for r in creates] == ["/api/v1/namespaces/default/pods" for _ in range(3)]
    assert [r["name"] for r in kube_api.requests(resource="pods/binding")] == ["p0", "p1", "p2"]


def test_a_paused_server_does_not_answer_and_drops_what_came_meanwhile(
    kube_api: KubeApiEmulator, core: client.CoreV1Api
) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    stream = core.list_namespaced_pod(
        "default", watch=True, resource_version=rv, _preload_content=False, _request_timeout=(1, 30)
    )
    kube_api.pause()
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):  # a POST is not retried on a read timeout
        core.create_namespaced_pod("default", pod_body("lost"), _request_timeout=(1, 0.5))
    assert time.monotonic() - started < 3
    kube_api.resume()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        stream.read()  # the watch open across the outage is cut
    assert core.list_namespaced_pod("default").items == []  # the create that timed out never happened


def test_refusing_connections_then_coming_back(kube_api: KubeApiEmulator, core: client.CoreV1Api) -> None:
    core.list_namespaced_pod("default")  # a pooled keep-alive connection exists
    kube_api.pause(refuse=True)
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        core.list_namespaced_pod("default", _request_timeout=(1, 1))
    kube_api.resume()
    assert wait_until(lambda: core.list_namespaced_pod("default").metadata.resource_version)


def test_the_emulator_as_a_process(tmp_path: object) -> None:
    with EmulatorProcess(
        tmp_path / "kc",
        "--nodes",
        "3",
        "--cluster",
        "clusters/gpu-east.yaml",  # type: ignore[operator]
        "--no-hypernode-crd",
    ) as proc:
        core = client.CoreV1Api(proc.api_client())
        nodes = {n.metadata.name: n for n in core.list_node().items}
        assert set(nodes) == {"node-0", "node-1", "node-2", "a100-0", "a100-1", "a100-2", "a100-3"}
        gpu = nodes["a100-0"]
        assert gpu.status.allocatable["nvidia.com/gpu"] == "8"
        assert (
            gpu.metadata.labels["nvidia.com/gpu.memory"] == "81920"
            and gpu.metadata.labels["volcano.sh/tor"] == "tor-0"
        )
        groups = {g.name for g in client.ApisApi(proc.api_client()).get_api_versions().groups}
        assert "topology.volcano.sh" not in groups
        proc.fail(500, count=1)
        with pytest.raises(ApiException):
            core.list_node()
        core.create_namespaced_pod("default", pod_body("p", duration="10ms", node="node-0"))
        wait_until(lambda: core.read_namespaced_pod("p", "default").status.phase == "Succeeded")
        assert proc.counts()["create pods"] == 1
        proc.kill()
        with pytest.raises(urllib3.exceptions.MaxRetryError):
            core.list_node(_request_timeout=(1, 1))


def test_a_killed_emulator_with_state_returns_with_its_objects(tmp_path: object) -> None:
    """With --state, kill -9 and a restart on the same port is an API server restarted on its etcd:
    the objects at their resourceVersions, a running pod finishing on time, later writes above."""
    state = str(tmp_path / "etcd.journal")  # type: ignore[operator]
    with EmulatorProcess(tmp_path / "kc", "--nodes", "1", "--state", state) as proc:  # type: ignore[operator]
        core = client.CoreV1Api(proc.api_client())
        cm = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
        core.create_namespaced_pod("default", pod_body("p", duration="2s", node="node-0"))
        wait_until(lambda: core.read_namespaced_pod("p", "default").status.phase == "Running", 10)
        core.create_namespaced_config_map("default", {"metadata": {"name": "gone"}})
        core.delete_namespaced_config_map("gone", "default")
        last = int(core.list_namespaced_config_map("default").metadata.resource_version)
        url = proc.url
        proc.kill()
        proc.restart()
        assert proc.url == url
        core = client.CoreV1Api(proc.api_client())
        again = core.read_namespaced_config_map("cm", "default")
        assert (again.data, again.metadata.resource_version) == (cm.data, cm.metadata.resource_version)
        assert wait_until(lambda: core.read_namespaced_pod("p", "default").status.phase == "Succeeded", 10)
        made = core.create_namespaced_config_map("default", {"metadata": {"name": "after"}})
        assert int(made.metadata.resource_version) > last
