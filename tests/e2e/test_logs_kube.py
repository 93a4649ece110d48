"""`vglobal logs` of a job on an emulated Kubernetes cluster (tests/kubeapi as its own process) with
the kube backend's agent: the hub relays what the agent reads from pods/log, so the caller holds no
credentials for the cluster; -f follows the lines the container writes; the API's refusals come
back to the caller as the API words them."""

from __future__ import annotations

import html
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import System, free_port, wait_for
from tests.e2e.streams import Stream
from tests.kubeapi import EmulatorProcess

pytestmark = pytest.mark.e2e

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: kube-talker}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      metadata:
        annotations:
          vglobal.io/sim-log: "model loaded\\nserving"
          vglobal.io/sim-log-interval: 200ms
      spec:
        containers: [{name: app, image: x, resources: {requests: {cpu: "1"}}}]
"""


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[EmulatorProcess]:
    with EmulatorProcess(tmp_path / "kube-a.kubeconfig", "--name", "kube-a", "--nodes", "2") as emu:
        yield emu


def test_logs_of_a_job_on_a_kube_cluster(system: System, emulator: EmulatorProcess) -> None:
    system.start_hub()
    system.start_kube_agent("a", emulator.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "the cluster registered", system)
    system.apply_text("kube-talker", JOB)
    with system.client() as c:
        job = wait_for(
            lambda: (j := c.get_job("kube-talker")).phase == "Running" and j.placements and j,
            60,
            "the job to run",
            system,
        )
    pod = job.placements[0].pod

    out = system.cli("logs", "kube-talker", pod).stdout.splitlines()
    assert out[:2] == ["model loaded", "serving"]
    out = system.cli("logs", "kube-talker", "--tail", "1", "--timestamps", "--prefix").stdout.splitlines()
    assert len(out) == 1 and out[0].startswith(f"[pod/{pod}] 20") and "Z " in out[0]

    with Stream(system.target, "logs", "kube-talker", pod, "-f", "-c", "app") as follow:
        first = follow.expect(lambda s: ": step " in s, "a step line")
        k = int(first.rsplit(" ", 1)[1])
        follow.expect(lambda s: s.endswith(f": step {k + 3}"), f"step {k + 3}, written after the call began")
        assert follow.interrupt() == 0

    res = system.cli("logs", "kube-talker", pod, "--previous", check=False)
    assert res.returncode != 0
    assert f'previous terminated container "app" in pod "{pod}" not found' in res.stderr
    res = system.cli("logs", "kube-talker", pod, "-c", "sidecar", check=False)
    assert res.returncode != 0 and f"container sidecar is not valid for pod {pod}" in res.stderr


UNPULLABLE = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: bad-image}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        containers: [{name: app, image: "registry.example/app:does-not-exist", resources: {requests: {cpu: "1"}}}]
"""


def test_a_pod_whose_image_cannot_be_pulled_says_so_in_describe(
    system: System, emulator: EmulatorProcess
) -> None:
    system.start_hub()
    system.start_kube_agent("a", emulator.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "the cluster registered", system)
    system.apply_text("bad-image", UNPULLABLE)
    # The cause stays while the image cannot be pulled: waiting for it is waiting for a lasting state.
    described = wait_for(
        lambda: "ImagePullBackOff" in (out := system.cli("describe", "job", "bad-image").stdout) and out,
        60,
        "ImagePullBackOff in describe",
        system,
    )
    assert 'pod bad-image-main-0: ImagePullBackOff: Back-off pulling image "registry.example/app:does-not-exist"' in (
        " ".join(described.split())
    )
    # The dashboard's job page reads the same report: no later than describe, so at once.
    page = _dashboard(system).get("/jobs/default/bad-image")
    assert 'ImagePullBackOff: Back-off pulling image "registry.example/app:does-not-exist"' in page, page
    res = system.cli("logs", "bad-image", "bad-image-main-0", check=False)
    assert res.returncode != 0 and "is waiting to start: ImagePullBackOff" in res.stderr

    # A job that fails for its pod's cause says it in its reason.
    system.apply_text("oom", OOM)
    with system.client() as c:
        wait_for(lambda: c.get_job("oom").phase == "Running", 60, "the oom job to run", system)
        emulator.oom_kill("default", "oom-main-0")
        job = wait_for(lambda: (j := c.get_job("oom")).phase == "Failed" and j, 60, "the oom job to fail", system)
    assert job.reason == "Failed: pod oom-main-0 OOMKilled, exit 137", job.reason
    assert "Failed: pod oom-main-0 OOMKilled, exit 137" in system.cli("describe", "job", "oom").stdout


OOM = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: oom}
spec:
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: app, image: x, resources: {requests: {cpu: "1"}}}]
"""


class _Dashboard:
    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as r:
            return html.unescape(r.read().decode())


def _dashboard(system: System) -> _Dashboard:
    """The dashboard in front of this (open, loopback) hub, every caller let in."""
    port = free_port()
    system._spawn("dashboard", ["--hub", system.target, "dashboard", "--listen", f"127.0.0.1:{port}", "--no-login"])
    dash = _Dashboard(f"http://127.0.0.1:{port}")

    def up() -> bool:
        try:
            return "ok" in dash.get("/healthz")
        except OSError:
            return False

    wait_for(up, 30, "the dashboard to serve", system)
    return dash


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: inference}
spec:
  replicas: 2
  selector:
    matchLabels: {app: inference}
  template:
    metadata:
      labels: {app: inference}
      annotations: {vglobal.io/sim-log: "ready to serve"}
    spec:
      containers: [{name: server, image: x, resources: {requests: {cpu: 100m}}}]
"""


def test_a_deployments_pods_carry_their_real_names_and_their_logs_read_by_them(
    system: System, emulator: EmulatorProcess
) -> None:
    from kubernetes import client

    from tests.kubeapi import api_client

    system.start_hub()
    system.start_kube_agent("a", emulator.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "the cluster registered", system)
    system.apply_text("inference", DEPLOYMENT)
    with system.client() as c:
        job = wait_for(
            lambda: (j := c.get_job("inference")).phase == "Running"
            and len(j.placements) == 2
            and all(p.phase == "Running" and p.ip for p in j.placements)
            and j,
            60,
            "both pods running with their IPs",
            system,
        )
    api = api_client(emulator.kubeconfig)
    try:
        items = client.CoreV1Api(api).list_namespaced_pod("default", label_selector=f"vglobal.io/job-uid={job.uid}")
    finally:
        api.close()
    real = {p.metadata.name: p.status.pod_ip for p in items.items}
    assert len(real) == 2 and all(name.startswith("inference-") for name in real)

    rows = [r for r in system.get_json("pods") if r["job"] == "inference"]
    assert {r["name"]: r["ip"] for r in rows} == real
    assert {r["cluster"] for r in rows} == {"kube-a"}
    table = system.cli("get", "pods", "--job", "inference").stdout
    assert all(name in table for name in real)
    described = system.cli("describe", "job", "inference").stdout
    assert all(name in described for name in real)

    name = sorted(real)[0]
    assert system.cli("logs", "inference", name).stdout.splitlines() == ["ready to serve"]

    # Messages name the object's own kind.
    assert system.cli("cancel", "job", "inference").stdout.strip() == "deployment.apps/default/inference cancelled"


def test_a_clusters_warning_about_a_pod_reaches_describe_once(system: System, emulator: EmulatorProcess) -> None:
    from kubernetes import client

    from tests.kubeapi import api_client

    system.start_hub()
    system.start_kube_agent("a", emulator.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "the cluster registered", system)
    system.apply_text("kube-talker", JOB)
    with system.client() as c:
        job = wait_for(
            lambda: (j := c.get_job("kube-talker")).phase == "Running" and j.placements and j, 60, "running", system
        )
    pod = job.placements[0].pod
    api = api_client(emulator.kubeconfig)
    try:
        core = client.CoreV1Api(api)
        for i in range(3):  # the kubelet says it again and again; the job hears it once
            core.create_namespaced_event(
                "default",
                {
                    "metadata": {"name": f"{pod}.mount{i}"},
                    "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod},
                    "type": "Warning",
                    "reason": "FailedMount",
                    "message": 'MountVolume.SetUp failed for volume "data": configmap "settings" not found',
                },
            )
    finally:
        api.close()
    said = f'pod {pod}: MountVolume.SetUp failed for volume "data": configmap "settings" not found'
    with system.client() as c:
        events = wait_for(
            lambda: [e for e in c.explain_job("kube-talker").events if e.reason == "FailedMount"] or None,
            60,
            "FailedMount among the job's events",
            system,
        )
    assert [e.message for e in events] == [said] and events[0].kind == "Warning"
    assert "FailedMount" in system.cli("describe", "job", "kube-talker").stdout
