"""pods/log through the official client: the emulated container's output, tailLines, sinceSeconds,
timestamps, previous after a restart, follow as the container writes, and the apiserver's 400s."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.kubeapi import KubeApiEmulator
from tests.kubeapi.testkit import binding, pod_body, wait_until

LOG = "vglobal.io/sim-log"
EVERY = "vglobal.io/sim-log-interval"


@pytest.fixture
def core(kube_api: KubeApiEmulator) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api.api_client())


def run(core: client.CoreV1Api, name: str, annotations: dict[str, str], **kw: object) -> None:
    body = pod_body(name, **kw)  # type: ignore[arg-type]
    body["metadata"]["annotations"].update(annotations)
    core.create_namespaced_pod("default", body)
    core.create_namespaced_pod_binding(name, "default", binding(name, "node-0"), _preload_content=False)
    wait_until(lambda: core.read_namespaced_pod(name, "default").status.phase == "Running")


def read(core: client.CoreV1Api, name: str, **kw: object) -> list[str]:
    text = core.read_namespaced_pod_log(name, "default", **kw)
    return str(text).splitlines()


def message(e: ApiException) -> str:
    return str(json.loads(e.body)["message"])


def test_output_tail_since_timestamps_and_refusals(core: client.CoreV1Api) -> None:
    run(core, "talk", {LOG: "one\ntwo\nthree"})
    assert read(core, "talk") == ["one", "two", "three"]
    assert read(core, "talk", tail_lines=2) == ["two", "three"]
    assert read(core, "talk", container="main", since_seconds=3600) == ["one", "two", "three"]
    stamped = read(core, "talk", timestamps=True, tail_lines=1)
    assert stamped[0].endswith("Z three") and stamped[0][10] == "T"
    with pytest.raises(ApiException) as e:
        read(core, "talk", previous=True)
    assert e.value.status == 400 and 'previous terminated container "main" in pod "talk" not found' in message(e.value)
    with pytest.raises(ApiException) as e:
        read(core, "talk", container="side")
    assert e.value.status == 400 and "container side is not valid for pod talk" in message(e.value)
    with pytest.raises(ApiException) as e:
        read(core, "nobody")
    assert e.value.status == 404
    core.create_namespaced_pod("default", pod_body("waits"))
    with pytest.raises(ApiException) as e:
        read(core, "waits")
    assert e.value.status == 400 and "is waiting to start: ContainerCreating" in message(e.value)


def test_follow_streams_new_lines_and_previous_after_a_restart(core: client.CoreV1Api) -> None:
    run(core, "ticker", {EVERY: "100ms"}, duration="1500ms", restart="Always")
    stream = core.read_namespaced_pod_log("ticker", "default", follow=True, _preload_content=False)
    seen: list[str] = []
    for chunk in stream.stream(1024):
        seen += chunk.decode().splitlines()
        if any(line.endswith(": step 5") for line in seen):
            break
    stream.release_conn()
    assert [line.rsplit(" ", 1)[1] for line in seen[:5]] == ["1", "2", "3", "4", "5"]
    wait_until(
        lambda: core.read_namespaced_pod("ticker", "default").status.container_statuses[0].restart_count >= 1,
        timeout=30,
    )
    previous = read(core, "ticker", previous=True)
    # startedAt and finishedAt are whole seconds: the 1.5 s span is read as 1 to 2 s of output.
    assert 5 <= len(previous) <= 25 and previous[0].endswith(": step 1")


def test_since_time_as_the_api_takes_it(core: client.CoreV1Api) -> None:
    run(core, "stamps", {EVERY: "100ms"})
    wait_until(lambda: len(read(core, "stamps")) >= 12)  # over a second: two whole seconds
    first = read(core, "stamps", timestamps=True)
    stamp = first[-1].split(" ", 1)[0]  # e.g. 2026-12-06T10:00:01.200000Z

    def since(value: str, **more: str) -> list[str]:
        # The official client has no sinceTime: its REST client asked directly.
        conf = core.api_client.configuration
        query = urlencode([("sinceTime", value), *more.items()])
        key = conf.get_api_key_with_prefix("BearerToken", alias="authorization")
        resp = core.api_client.rest_client.request(
            "GET", f"{conf.host}/api/v1/namespaces/default/pods/stamps/log?{query}",
            headers={"authorization": key} if key else {},
        )  # fmt: skip
        resp.read()
        if resp.status >= 400:
            raise ApiException(http_resp=resp)
        return str(resp.data.decode()).splitlines()

    whole = stamp.split(".")[0] + "Z"  # the API reads whole seconds
    got = since(whole)
    # Each line stamped at or after that second; the later ones were written since.
    want = [line.split(" ", 1)[1] for line in first if line[:19] >= whole[:19]]
    assert 1 <= len(want) < len(first) and got[: len(want)] == want, (got, want)
    with pytest.raises(ApiException) as e:
        since(whole, sinceSeconds="5")
    assert e.value.status == 400 and "at most one of sinceTime or sinceSeconds" in message(e.value)
