"""Workload kinds through the whole system: one hub, two emulated Kubernetes clusters (tests/kubeapi,
each its own process) and a kube agent per cluster, all real processes on loopback. Each kind, from
a manifest as its upstream docs show it, is admitted, written into its cluster by the agent, whose
pods the kind's controller makes and the agent binds; RayJobs and batch Jobs end, the long-running
kinds hold until deleted, and a delete removes the object and its pods. A cluster without KubeRay
gets no Ray object, and an agent killed with -9 takes over the RayCluster it finds as it is."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import System, wait_for
from tests.kubeapi import EmulatorProcess, api_client
from vglobal.model.errors import ManifestError
from vglobal.model.manifests import parse_manifests

pytestmark = pytest.mark.e2e
KUBERAY_SAMPLES = "ray-operator/config/samples"

NODES = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: NAME}
spec:
  nodeGroups:
  - name: NAME-n
    count: 4
    allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
"""

# KubeRay's ray-cluster.sample.yaml and ray-job.sample.yaml (v1.5), as their docs show them; the
# RayJob's sim-duration annotation tells the emulator's kubelet when its submitter pod ends.
RAY_CLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-kuberay
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          resources:
            limits: {cpu: "1", memory: "5Gi"}
            requests: {cpu: "1", memory: "5Gi"}
          ports:
          - {containerPort: 6379, name: gcs-server}
          - {containerPort: 8265, name: dashboard}
          - {containerPort: 10001, name: client}
  workerGroupSpecs:
  - replicas: 1
    minReplicas: 1
    maxReplicas: 5
    groupName: workergroup
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
          resources:
            limits: {cpu: "1", memory: "1Gi"}
            requests: {cpu: "1", memory: "1Gi"}
"""

RAY_JOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rayjob-sample
  annotations: {vglobal.io/sim-duration: 2s}
spec:
  entrypoint: python /home/ray/samples/sample_code.py
  runtimeEnvYAML: |
    pip:
      - requests==2.26.0
      - pendulum==2.1.2
    env_vars:
      counter_name: "test_counter"
  rayClusterSpec:
    rayVersion: "2.52.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
            ports:
            - {containerPort: 6379, name: gcs-server}
            - {containerPort: 8265, name: dashboard}
            - {containerPort: 10001, name: client}
            resources:
              limits: {cpu: "1", memory: "5Gi"}
              requests: {cpu: "1", memory: "2Gi"}
    workerGroupSpecs:
    - replicas: 1
      minReplicas: 1
      maxReplicas: 5
      groupName: small-group
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray:2.52.0
            resources:
              limits: {cpu: "1"}
              requests: {cpu: "200m"}
"""

# LeaderWorkerSet's docs/examples/sample/lws.yaml: 3 groups of 4 pods
LWS = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: leaderworkerset-sample
spec:
  replicas: 3
  leaderWorkerTemplate:
    size: 4
    workerTemplate:
      spec:
        containers:
        - name: nginx
          image: nginxinc/nginx-unprivileged:1.27
          resources:
            limits: {cpu: "100m"}
            requests: {cpu: "50m"}
          ports:
          - containerPort: 8080
"""

# The Kubernetes docs' nginx Deployment and StatefulSet, with Volcano's gang annotation
DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels: {app: nginx}
  annotations: {scheduling.volcano.sh/group-min-member: "3"}
spec:
  replicas: 3
  selector:
    matchLabels: {app: nginx}
  template:
    metadata:
      labels: {app: nginx}
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
        resources:
          requests: {cpu: 100m, memory: 64Mi}
"""

STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  annotations: {scheduling.volcano.sh/group-min-member: "2"}
spec:
  selector:
    matchLabels: {app: nginx}
  serviceName: nginx
  replicas: 2
  podManagementPolicy: Parallel
  template:
    metadata:
      labels: {app: nginx}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: nginx
        image: registry.k8s.io/nginx-slim:0.24
        ports:
        - {containerPort: 80, name: web}
        resources:
          requests: {cpu: 100m, memory: 64Mi}
"""

# The Kubernetes docs' pi Job, run as a gang of 2
BATCH_JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  parallelism: 2
  completions: 2
  template:
    metadata:
      annotations: {vglobal.io/sim-duration: 2s}
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]
        resources:
          requests: {cpu: 500m, memory: 64Mi}
      restartPolicy: Never
  backoffLimit: 4
"""

RAY_CRDS = ("rayclusters.ray.io", "rayjobs.ray.io")
# (group, version, plural, pods' label of the object's name) per kind
WHERE = {
    "RayCluster": ("ray.io", "v1", "rayclusters", "ray.io/cluster"),
    "RayJob": ("ray.io", "v1", "rayjobs", ""),
    "LeaderWorkerSet": (
        "leaderworkerset.x-k8s.io",
        "v1",
        "leaderworkersets",
        "leaderworkerset.sigs.k8s.io/name",
    ),
    "Deployment": ("apps", "v1", "deployments", ""),
    "StatefulSet": ("apps", "v1", "statefulsets", ""),
    "Job": ("batch", "v1", "jobs", "job-name"),
}


def emulator(tmp: Path, name: str) -> EmulatorProcess:
    (spec := tmp / f"{name}.yaml").write_text(NODES.replace("NAME", name))
    return EmulatorProcess(
        tmp / f"{name}.kubeconfig", "--name", name, "--cluster", str(spec), "--no-hypernode-crd"
    )


def workload(kubeconfig: Path, kind: str, name: str) -> dict[str, Any] | None:
    """The object as its cluster holds it; None when gone or going."""
    from kubernetes import client

    group, version, plural, _ = WHERE[kind]
    api = api_client(kubeconfig)
    try:
        got: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
            group, version, "default", plural, name
        )
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    finally:
        api.close()
    return None if got["metadata"].get("deletionTimestamp") else got


def run_pods(kubeconfig: Path, job_uid: str) -> list[Any]:
    """Live pods of the run: the agent labels every pod template of the object it writes."""
    from kubernetes import client

    api = api_client(kubeconfig)
    try:
        items = client.CoreV1Api(api).list_namespaced_pod(
            "default", label_selector=f"vglobal.io/job-uid={job_uid}"
        )
    finally:
        api.close()
    return [p for p in items.items if not p.metadata.deletion_timestamp]


def jobs(system: System) -> dict[str, dict[str, Any]]:
    return {j["name"]: j for j in system.get_json("jobs")}


def apply(system: System, tmp: Path, name: str, text: str) -> None:
    (path := tmp / f"{name}.yaml").write_text(text)
    system.cli("apply", "-f", str(path))


def phase_is(system: System, name: str, *phases: str) -> dict[str, Any] | None:
    j = jobs(system).get(name)
    return j if j is not None and j["phase"] in phases else None


@pytest.fixture
def emulators(tmp_path: Path) -> Iterator[dict[str, EmulatorProcess]]:
    try:
        parse_manifests(RAY_CLUSTER + "---" + LWS + "---" + DEPLOYMENT + "---" + BATCH_JOB)
    except ManifestError as exc:
        pytest.skip(f"the hub does not take these kinds: {exc}")
    started: dict[str, EmulatorProcess] = {}
    try:
        # "kube-a" comes first by name, so admission would pick it were KubeRay's absence not heeded
        started["kube-a"] = emulator(tmp_path, "kube-a")
        started["kube-b"] = emulator(tmp_path, "kube-b")
        for crd in RAY_CRDS:
            started["kube-a"].set_crd(crd, False)
        yield started
    finally:
        for e in started.values():
            e.stop()


def start_agents(system: System, emulators: dict[str, EmulatorProcess]) -> None:
    for name, emu in emulators.items():
        system.start_kube_agent(name, emu.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(system.get_json("clusters")) == len(emulators), 60, "agents registered", system)


def test_each_kind_runs_to_its_end_or_until_deleted_and_ray_skips_the_cluster_without_kuberay(
    system: System, emulators: dict[str, EmulatorProcess], tmp_path: Path
) -> None:
    system.start_hub()
    start_agents(system, emulators)
    labels = {c["name"]: c["labels"] for c in system.get_json("clusters")}
    assert labels["kube-a"]["workloads.vglobal.io/rayclusters.ray.io"] == "missing"
    assert labels["kube-b"]["workloads.vglobal.io/rayclusters.ray.io"] == "served"
    described = system.cli("describe", "cluster", "kube-a").stdout
    missing = next(line for line in described.splitlines() if line.startswith("Kinds missing:"))
    assert "ray.io/v1 RayCluster" in missing and "ray.io/v1 RayJob" in missing and "apps/v1" not in missing
    manifests = {
        "raycluster-kuberay": ("RayCluster", RAY_CLUSTER),
        "rayjob-sample": ("RayJob", RAY_JOB),
        "leaderworkerset-sample": ("LeaderWorkerSet", LWS),
        "nginx-deployment": ("Deployment", DEPLOYMENT),
        "web": ("StatefulSet", STATEFULSET),
        "pi": ("Job", BATCH_JOB),
    }
    for name, (_, text) in manifests.items():
        apply(system, tmp_path, name, text)
    ended = {"rayjob-sample", "pi"}
    for name in ended:
        done = wait_for(
            lambda n=name: phase_is(system, n, "Completed", "Failed"), 120, f"{name} to end", system
        )
        assert done["phase"] == "Completed", done
    held = {n: wait_for(lambda n=n: phase_is(system, n, "Running"), 120, f"{n} running", system)
            for n in manifests if n not in ended}  # fmt: skip
    got = jobs(system)
    assert got["raycluster-kuberay"]["cluster"] == got["rayjob-sample"]["cluster"] == "kube-b"
    rayjob = workload(emulators["kube-b"].kubeconfig, "RayJob", "rayjob-sample")
    assert rayjob is None or rayjob["status"]["jobStatus"] == "SUCCEEDED"  # kept a while, or gone
    counts = emulators["kube-a"].counts()
    assert not any("rayclusters" in k or "rayjobs" in k for k in counts if k.startswith("create")), counts

    sizes = {"raycluster-kuberay": 2, "leaderworkerset-sample": 12, "nginx-deployment": 3, "web": 2}
    for name, job in held.items():
        kind = manifests[name][0]
        kubeconfig = emulators[job["cluster"]].kubeconfig
        obj = workload(kubeconfig, kind, name)
        assert obj is not None and obj["metadata"]["labels"]["vglobal.io/job-uid"] == job["uid"]
        pods = run_pods(kubeconfig, job["uid"])
        assert len(pods) == sizes[name] and all(p.spec.node_name for p in pods), (name, pods)
        assert {p.spec.scheduler_name for p in pods} == {"vglobal"}
    lws = emulators[held["leaderworkerset-sample"]["cluster"]].kubeconfig
    groups: dict[str, set[str]] = {}
    for p in run_pods(lws, held["leaderworkerset-sample"]["uid"]):
        groups.setdefault(p.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"], set()).add(
            p.spec.node_name
        )
    assert len(groups) == 3

    for name in held:
        system.cli("delete", "job", name)
    for name, job in held.items():
        kubeconfig = emulators[job["cluster"]].kubeconfig
        wait_for(
            lambda k=kubeconfig, n=name, u=job["uid"]: (
                workload(k, manifests[n][0], n) is None and not run_pods(k, u)
            ),
            60,
            f"{name}: its object and pods deleted",
            system,
        )


def test_a_raycluster_pinned_to_the_cluster_without_kuberay_waits_naming_the_missing_kind(
    system: System, emulators: dict[str, EmulatorProcess], tmp_path: Path
) -> None:
    system.start_hub()
    start_agents(system, emulators)
    pinned = RAY_CLUSTER.replace(
        "  name: raycluster-kuberay\n", "  name: pinned\n  annotations: {vglobal.io/clusters: kube-a}\n"
    )
    apply(system, tmp_path, "pinned", pinned)
    waiting = wait_for(
        lambda: (j := jobs(system).get("pinned")) and j["reason"] and j, 60, "a reason", system
    )
    assert waiting["phase"] == "Pending" and not waiting["cluster"]
    assert re.search(r"kube-a does not serve rayclusters\.ray\.io", waiting["reason"]), waiting["reason"]
    assert "workloads.vglobal.io/rayclusters.ray.io=missing" in waiting["reason"]
    # the same manifest without the pin goes to the cluster that serves it
    apply(system, tmp_path, "free", RAY_CLUSTER.replace("raycluster-kuberay", "free"))
    running = wait_for(lambda: phase_is(system, "free", "Running"), 120, "free running", system)
    assert running["cluster"] == "kube-b"
    assert phase_is(system, "pinned", "Pending")


def test_a_killed_agent_takes_over_the_raycluster_it_finds_and_a_deleted_run_is_fenced(
    system: System, emulators: dict[str, EmulatorProcess], tmp_path: Path
) -> None:
    system.start_hub()
    b = emulators["kube-b"]
    system.start_kube_agent("kube-b", b.kubeconfig, "--lease-duration", "0")
    wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "the agent registered", system)
    apply(system, tmp_path, "rc", RAY_CLUSTER)
    apply(system, tmp_path, "gone", RAY_CLUSTER.replace("raycluster-kuberay", "gone"))
    kept = wait_for(
        lambda: phase_is(system, "raycluster-kuberay", "Running"), 120, "the RayCluster running", system
    )
    gone = wait_for(lambda: phase_is(system, "gone", "Running"), 120, "the second one running", system)

    def observed(name: str, uid: str) -> tuple[str, frozenset[str]]:
        obj = workload(b.kubeconfig, "RayCluster", name)
        assert obj is not None, name
        return obj["metadata"]["uid"], frozenset(p.metadata.uid for p in run_pods(b.kubeconfig, uid))

    before = observed("raycluster-kuberay", kept["uid"])
    assert len(before[1]) == 2
    system.kill("agent-kube-b", signal.SIGKILL)
    # while no agent serves the cluster, one of the two is deleted: the hub no longer holds its run
    system.cli("delete", "job", "gone")
    system.start_kube_agent("kube-b-again", b.kubeconfig, "--lease-duration", "0", "--name", "kube-b")
    wait_for(lambda: "took over 2 runs" in system.whole_log("agent-kube-b-again"), 60, "the takeover", system)
    wait_for(
        lambda: (
            workload(b.kubeconfig, "RayCluster", "gone") is None and not run_pods(b.kubeconfig, gone["uid"])
        ),
        60,
        "the deleted run's RayCluster and pods gone",
        system,
    )
    # a job submitted after the restart runs to its end: the agent serves the cluster again
    apply(system, tmp_path, "pi", BATCH_JOB)
    done = wait_for(lambda: phase_is(system, "pi", "Completed", "Failed"), 120, "pi to end", system)
    assert done["phase"] == "Completed"
    assert observed("raycluster-kuberay", kept["uid"]) == before, "the RayCluster or a pod was made again"
    assert b.counts().get("create rayclusters", 0) == 2  # one per job, none again
    assert phase_is(system, "raycluster-kuberay", "Running")["cluster"] == "kube-b"  # type: ignore[index]
    system.cli("delete", "job", "raycluster-kuberay")
    wait_for(
        lambda: (
            workload(b.kubeconfig, "RayCluster", "raycluster-kuberay") is None
            and not run_pods(b.kubeconfig, kept["uid"])
        ),
        60,
        "the RayCluster and its pods deleted",
        system,
    )


def test_on_an_emulated_cluster_each_lws_group_is_bound_whole_and_one_that_cannot_fit_waits_whole(
    system: System, tmp_path: Path
) -> None:
    # One node of 10 cpu: two groups of 4 one-cpu pods and half of a third.
    (spec := tmp_path / "small.yaml").write_text(
        NODES.replace("NAME", "small").replace("count: 4", "count: 1").replace('cpu: "16"', 'cpu: "10"')
    )
    emu = EmulatorProcess(tmp_path / "small.kubeconfig", "--name", "small", "--cluster", str(spec))
    try:
        system.start_hub()
        start_agents(system, {"small": emu})
        apply(system, tmp_path, "lws", LWS.replace('"100m"', '"1"').replace('"50m"', '"1"'))
        job = wait_for(lambda: phase_is(system, "leaderworkerset-sample", "Running"), 120, "running", system)
        with system.client() as c:
            wait_for(
                lambda: any(e.reason == "Unschedulable" for e in c.explain_job(job["name"]).events),
                60,
                "the third group found unschedulable",
                system,
            )
        pods = run_pods(emu.kubeconfig, job["uid"])
        bound: dict[str, int] = {}
        unbound: dict[str, int] = {}
        for p in pods:
            group = p.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"]
            side = bound if p.spec.node_name else unbound
            side[group] = side.get(group, 0) + 1
        assert sorted(bound.values()) == [4, 4], (bound, unbound)
        assert list(unbound.values()) == [4] and not set(unbound) & set(bound), (bound, unbound)
    finally:
        emu.stop()
