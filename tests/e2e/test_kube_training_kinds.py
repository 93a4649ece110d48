"""The training and serving kinds through the whole system on emulated clusters: the samples JobSet,
the training operator, the MPI operator, Trainer, KubeRay and Kthena ship (tests/fixtures/upstream,
applied unchanged) and a Volcano PodGroup with its pods are admitted as their gangs, written by a kube
agent, their pods made by the emulated operators (tests/kubeapi/ctl_training.py, ctl_ray.py,
ctl_kthena.py) and bound by the agent; runs that end end, a cluster that stops answering moves its
JobSet to the other, and a delete removes object and pods. Hub and agents take AppWrapper by a
KindDefinition (tests/fixtures/kinds): its sample runs to its end through the emulated AppWrapper
controller; a kind nobody defined is refused, naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import System, wait_for
from tests.e2e.test_kube_workloads import NODES
from tests.kubeapi import EmulatorProcess, api_client

pytestmark = pytest.mark.e2e
UPSTREAM = Path(__file__).parents[1] / "fixtures" / "upstream"

# name -> (sample, (group, version, plural) of the object or None for a Pod, namespace, pods it runs)
HELD: dict[str, tuple[str, tuple[str, str, str] | None, str, int]] = {
    "paralleljobs": ("jobset/paralleljobs.yaml", ("jobset.x-k8s.io", "v1alpha2", "jobsets"), "default", 5),
    "pytorch-simple": ("training-operator/simple.yaml", ("kubeflow.org", "v1", "pytorchjobs"), "kubeflow", 2),
    "pi": ("mpi-operator/pi.yaml", ("kubeflow.org", "v2beta1", "mpijobs"), "default", 3),
    "multi-node-example": (
        "trainer/01-multi-node.yaml",
        ("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
        "default",
        3,
    ),
    "rayservice-mobilenet": (
        "kuberay/ray-service.mobilenet.yaml",
        ("ray.io", "v1", "rayservices"),
        "default",
        2,
    ),
    "nginx": ("../workloads/pod.nginx.yaml", None, "default", 1),  # the pod is the object
    # Kthena's ModelServing: one ServingGroup of 1P1D, each an entry and 3 workers
    "sample": (
        "kthena/sample.yaml",
        ("workload.serving.volcano.sh", "v1alpha1", "modelservings"),
        "default",
        8,
    ),
    # a Volcano PodGroup with its 3 plain pods, all written by the agent
    "spark-pi": (
        "../workloads/podgroup.spark.yaml",
        ("scheduling.volcano.sh", "v1beta1", "podgroups"),
        "default",
        3,
    ),
}
SIM_ENDS = {"vglobal.io/sim-duration": "2s"}
KINDS = Path(__file__).parents[1] / "fixtures" / "kinds"
DEFINED = str(KINDS / "appwrapper.kinds.yaml")  # AppWrapper, a kind vglobal has no code for
WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {}\n"
QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: user-queue}\nspec: {weight: 1}\n"


def emulator(tmp: Path, name: str) -> EmulatorProcess:
    (spec := tmp / f"{name}.yaml").write_text(NODES.replace("NAME", name))
    return EmulatorProcess(
        tmp / f"{name}.kubeconfig", "--name", name, "--cluster", str(spec), "--no-hypernode-crd"
    )


def obj(
    kubeconfig: Path, where: tuple[str, str, str] | None, namespace: str, name: str
) -> dict[str, Any] | None:
    """The object as its cluster holds it (a Pod: the pod); None when gone or going."""
    from kubernetes import client

    if where is None:
        return next((p for p in pods_of(kubeconfig, namespace) if p["metadata"]["name"] == name), None)

    api = api_client(kubeconfig)
    try:
        got: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
            *where[:2], namespace, where[2], name
        )
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    finally:
        api.close()
    return None if got["metadata"].get("deletionTimestamp") else got


def pods_of(kubeconfig: Path, namespace: str, job_uid: str = "") -> list[dict[str, Any]]:
    """Live pods of the run, as JSON (the MPIJob sample's ``cpu: 1`` stays a number in the
    emulator, which the client's typed models refuse)."""
    from kubernetes import client

    api = api_client(kubeconfig)
    try:
        resp = client.CoreV1Api(api).list_namespaced_pod(
            namespace,
            label_selector=f"vglobal.io/job-uid={job_uid}" if job_uid else "",
            _preload_content=False,
        )
        items = json.loads(resp.data)["items"]
    finally:
        api.close()
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def ending(path: str, name: str) -> str:
    """The sample renamed, its pods told (by annotation) to end after 2s."""
    (doc,) = yaml.safe_load_all((UPSTREAM / path).read_text())
    doc["metadata"]["name"] = name
    if doc["kind"] == "AppWrapper":
        doc["spec"]["components"][0]["template"]["spec"]["template"]["metadata"] = {"annotations": SIM_ENDS}
    elif doc["kind"] == "TrainJob":
        doc["metadata"]["annotations"] = SIM_ENDS  # the agent's runtime patch takes it to the pods
    else:
        for rs in doc["spec"]["pytorchReplicaSpecs"].values():
            rs["template"]["metadata"] = {"annotations": SIM_ENDS}
    return yaml.safe_dump(doc)


@pytest.fixture
def emulators(tmp_path: Path) -> Iterator[dict[str, EmulatorProcess]]:
    started: dict[str, EmulatorProcess] = {}
    try:
        for name in ("kube-a", "kube-b"):
            started[name] = emulator(tmp_path, name)
        yield started
    finally:
        for e in started.values():
            e.stop()


def test_the_upstream_samples_run_end_fail_over_and_are_deleted_with_their_pods(
    system: System, emulators: dict[str, EmulatorProcess], tmp_path: Path
) -> None:
    system.start_hub("--cluster-timeout", "2s", "--failover-after", "2s", "--kinds-file", DEFINED)
    for name, emu in emulators.items():
        system.start_kube_agent(
            name, emu.kubeconfig, "--lease-duration", "0", "--create-namespaces", "--kinds-file", DEFINED
        )
    # one apply of every sample (as its project ships it) and of two runs told to end
    texts = [(UPSTREAM / sample).read_text() for sample, *_ in HELD.values()]
    texts += [
        ending("training-operator/simple.yaml", "pytorch-done"),
        ending("trainer/01-multi-node.yaml", "train-done"),
        QUEUE,
        ending("../kinds/wrapped-job.yaml", "aw-done"),
    ]
    (everything := tmp_path / "all.yaml").write_text("\n---\n".join(texts))
    with system.client() as c:
        wait_for(lambda: len(c.list_clusters()) == 2, 60, "agents registered", system)
        labels = c.list_clusters()[0].labels
        for resource in (
            "jobsets.jobset.x-k8s.io",
            "pytorchjobs.kubeflow.org",
            "trainjobs.trainer.kubeflow.org",
            "podgroups.scheduling.volcano.sh",
            "modelservings.workload.serving.volcano.sh",
            "appwrappers.workload.codeflare.dev",
        ):
            assert labels[f"workloads.vglobal.io/{resource}"] == "served"
        applied = system.cli("apply", "-f", str(everything)).stdout
        assert "appwrapper.workload.codeflare.dev/default/aw-done created" in applied, applied
        refused = system.apply_text("widget", WIDGET, check=False)
        assert refused.returncode != 0 and 'unknown kind "Widget"' in refused.stderr, refused.stderr

        def job(name: str, ns: str = "default") -> Any:
            return c.get_job(name, ns)

        for name, ns in (("pytorch-done", "kubeflow"), ("train-done", "default"), ("aw-done", "default")):
            done = wait_for(
                lambda n=name, ns=ns: (j := job(n, ns)).phase in ("Completed", "Failed") and j,
                120,
                f"{name} ends",
                system,
            )
            assert done.phase == "Completed", done
        held = {
            n: wait_for(
                lambda n=n, ns=ns: (j := job(n, ns)).phase == "Running" and j, 120, f"{n} running", system
            )
            for n, (_, _, ns, _) in HELD.items()
        }
        for name, got_job in held.items():
            _, where, namespace, size = HELD[name]
            kubeconfig = emulators[got_job.cluster].kubeconfig
            got = obj(kubeconfig, where, namespace, name)
            assert got is not None and got["metadata"]["labels"]["vglobal.io/job-uid"] == got_job.uid
            pods = wait_for(
                lambda k=kubeconfig, ns=namespace, u=got_job.uid, s=size: (
                    p
                    if len(p := pods_of(k, ns, u)) == s and all(x["spec"].get("nodeName") for x in p)
                    else None
                ),
                60,
                f"{name}'s {size} pods bound",
                system,
            )
            assert {p["spec"]["schedulerName"] for p in pods} == {"vglobal"}, name

        described = system.cli("describe", "job", "paralleljobs").stdout
        assert "Gang (derived from the JobSet)" in described
        assert (
            "spec.replicatedJobs[0].template.spec.parallelism 4 x spec.replicatedJobs[0].replicas 1"
            in described
        )

        # the cluster holding the JobSet stops answering: its jobs move, the JobSet whole
        first = held["paralleljobs"].cluster
        other = "kube-b" if first == "kube-a" else "kube-a"
        emulators[first].pause()
        try:
            moved = wait_for(
                lambda: (j := job("paralleljobs")).cluster == other and j.phase == "Running" and j,
                90,
                "the JobSet on the other cluster",
                system,
            )
            kube = emulators[other].kubeconfig
            wait_for(lambda: len(pods_of(kube, "default", moved.uid)) == 5, 60, "its 5 pods there", system)
            # the PodGroup is on the other cluster now too (moved whole if it was on the lost one)
            group = wait_for(
                lambda: (j := job("spark-pi")).cluster == other and j.phase == "Running" and j,
                90,
                "the PodGroup on the other cluster",
                system,
            )
            wait_for(lambda: len(pods_of(kube, "default", group.uid)) == 3, 60, "its 3 pods there", system)
        finally:
            emulators[first].resume()
        wait_for(
            lambda: not pods_of(emulators[first].kubeconfig, "default", held["paralleljobs"].uid),
            60,
            "stale pods gone",
            system,
        )

        current = {n: job(n, HELD[n][2]) for n in HELD}
        for name, (_, _, ns, _) in HELD.items():
            c.delete_job(name, ns)
        for name, got_job in current.items():
            _, where, namespace, _ = HELD[name]
            kubeconfig = emulators[got_job.cluster].kubeconfig
            wait_for(
                lambda k=kubeconfig, w=where, ns=namespace, n=name, u=got_job.uid: (
                    obj(k, w, ns, n) is None and not pods_of(k, ns, u)
                ),
                60,
                f"{name} and its pods deleted",
                system,
            )
