"""``vglobal sim run`` runs the real system: admit() on queues and fair share across several
clusters, then the agents' code; bad input gets an error naming the file and the field."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from vglobal.sim.inputs import SimInputError
from vglobal.sim.run import run_simulation

CLUSTER = """\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - {{name: {name}, count: 4, allocatable: {{cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}}}
"""
QUEUE = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec: {{weight: {weight}{extra}}}
"""
JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, annotations: {{vglobal.io/sim-duration: {duration}}}}}
spec:
  queue: {queue}{extra}
  tasks:
  - name: w
    replicas: {replicas}
    template:
      spec: {{containers: [{{name: w, image: x, resources: {{requests: {{nvidia.com/gpu: "{gpus}"}}}}}}]}}
"""
GPU = "nvidia.com/gpu"


def job(
    name: str, queue: str, *, gpus: int = 1, replicas: int = 1, duration: str = "1h", extra: str = ""
) -> str:
    return JOB.format(name=name, queue=queue, gpus=gpus, replicas=replicas, duration=duration, extra=extra)


def queue(name: str, weight: int = 1, extra: str = "") -> str:
    return QUEUE.format(name=name, weight=weight, extra=extra)


@pytest.fixture
def clusters(tmp_path: Path) -> list[Path]:
    out = []
    for name in ("east", "west"):
        out.append(tmp_path / f"{name}.yaml")
        out[-1].write_text(CLUSTER.format(name=name))
    return out


def write(path: Path, docs: list[str]) -> Path:
    path.write_text("---\n".join(docs))
    return path


def samples(result: dict[str, Any], name: str) -> list[list[Any]]:
    return next(q["samples"] for q in result["queues"] if q["name"] == name)


def test_weighted_fair_share_across_two_clusters_through_the_cli(
    clusters: list[Path], tmp_path: Path
) -> None:
    jobs = [queue("a", 3), queue("b", 1)]
    jobs += [job(f"{q}-{i:02d}", q) for q in "ab" for i in range(64)]
    write(tmp_path / "jobs.yaml", jobs)
    args = [
        "sim",
        "run",
        "--cluster",
        "east.yaml",
        "--cluster",
        "west.yaml",
        "--jobs",
        "jobs.yaml",
        "-o",
        "json",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "vglobal", *args], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    first = [j for j in result["jobs"] if j["admittedAt"] == 0.0]
    assert Counter(j["queue"] for j in first) == {"a": 48, "b": 16}  # 64 GPUs shared 3:1
    assert {j["cluster"] for j in first if j["queue"] == "a"} == {"east", "west"}
    assert {j["cluster"] for j in first if j["queue"] == "b"} == {"east", "west"}
    assert Counter(j["cluster"] for j in first) == {"east": 32, "west": 32}
    # the rest run when the first wave ends, an hour later; everything completes
    assert {j["admittedAt"] for j in result["jobs"]} == {0.0, 3600.0}
    assert {j["phase"] for j in result["jobs"]} == {"Completed"}
    assert [[t, s.get(GPU)] for t, s in samples(result, "a")] == [[0.0, 48], [3600.0, 16], [7200.0, None]]
    assert [[t, s.get(GPU)] for t, s in samples(result, "b")] == [[0.0, 16], [3600.0, 48], [7200.0, None]]
    assert result["time"] == 7200.0


def test_reclaim_stops_the_victim_on_its_cluster_and_requeues_it(
    clusters: list[Path], tmp_path: Path
) -> None:
    """a fills both clusters; b's job, submitted 10 minutes later, takes a's newest job back."""
    docs = [queue("a"), queue("b")] + [job(f"a-{i}", "a", gpus=8, duration="2h") for i in range(8)]
    later = ", vglobal.io/sim-submit-at: 10m"
    docs.append(job("b-0", "b", gpus=8, duration="30m").replace("duration: 30m", "duration: 30m" + later))
    result = run_simulation(
        cluster_files=clusters, jobs_path=write(tmp_path / "jobs.yaml", docs), until=3600.0
    )
    by_name = {j["name"]: j for j in result["jobs"]}
    victims = [j for j in result["jobs"] if any(e["reason"] == "Reclaimed" for e in j["events"])]
    assert len(victims) == 1  # one 8-GPU job of a makes room for b's
    victim = victims[0]
    events = [(e["time"], e["reason"]) for e in victim["events"]]
    assert (600.0, "Reclaimed") in events and [r for _, r in events].count("Dispatched") == 2
    # b's job was placed at once: the victim's agent had stopped its pods on hearing the Reclaim
    b_events = [(e["time"], e["reason"]) for e in by_name["b-0"]["events"]]
    assert (600.0, "Dispatched") in b_events and (600.0, "JobRunning") in b_events
    assert by_name["b-0"]["phase"] == "Completed" and by_name["b-0"]["admittedAt"] == 600.0
    # the victim waited with its place kept and ran again once b's job finished
    assert victim["phase"] == "Running" and victim["admittedAt"] == 2400.0


def test_priority_class_and_queue_capability_are_honoured(clusters: list[Path], tmp_path: Path) -> None:
    pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\nvalue: 1000\n"
    docs = [pc, queue("q", extra=", capability: {nvidia.com/gpu: 16}")]
    docs += [job(f"low-{i}", "q", gpus=8) for i in range(3)]
    docs.append(job("high", "q", gpus=8, extra="\n  priorityClassName: urgent"))
    result = run_simulation(cluster_files=clusters, jobs_path=write(tmp_path / "jobs.yaml", docs), until=60.0)
    admitted = sorted(j["name"] for j in result["jobs"] if j["admittedAt"] == 0.0)
    assert admitted == ["high", "low-0"]  # capability 16 GPUs; the PriorityClass goes first
    waiting = {j["name"]: j["reason"] for j in result["jobs"] if j["admittedAt"] is None}
    assert set(waiting) == {"low-1", "low-2"}
    assert all("capability" in r for r in waiting.values()), waiting


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        (["kind: Foo\napiVersion: v1\nmetadata: {name: x}\n"], 'jobs.yaml: kind: unknown kind "Foo"'),
        ([job("j", "nope")], 'jobs.yaml: Job "default/j": spec.queue: queue "nope" not found'),
        (
            [queue("q", extra=", parent: ghost")],
            'jobs.yaml: Queue "q": spec.parent: parent queue "ghost" not found',
        ),
        ([queue("p"), queue("c", extra=", parent: p"), job("j", "p")], 'queue "p" has child queues'),
        ([queue("q", extra=", state: Closed"), job("j", "q")], 'spec.queue: queue "q" is Closed'),
        (
            [job("j", "default", extra="\n  priorityClassName: vip")],
            'spec.priorityClassName: priority class "vip"',
        ),
        ([job("j", "default"), job("j", "default")], 'Job "default/j": metadata.name: already defined'),
        ([CLUSTER.format(name="x")], "jobs.yaml: kind: SimCluster belongs in a --cluster file"),
    ],
)
def test_bad_input_names_the_file_and_field(
    clusters: list[Path], tmp_path: Path, docs: list[str], message: str
) -> None:
    path = write(tmp_path / "jobs.yaml", docs)
    with pytest.raises(SimInputError) as err:
        run_simulation(cluster_files=clusters, jobs_path=path)
    assert message in str(err.value)


def test_missing_and_wrong_files_are_named(clusters: list[Path], tmp_path: Path) -> None:
    jobs = write(tmp_path / "jobs.yaml", [job("j", "default")])
    with pytest.raises(SimInputError, match=r"nowhere\.yaml: no such file or directory"):
        run_simulation(cluster_files=[tmp_path / "nowhere.yaml"], jobs_path=jobs)
    with pytest.raises(
        SimInputError, match=r"jobs\.yaml: kind: expected SimCluster in a cluster file, got Job"
    ):
        run_simulation(cluster_files=[jobs], jobs_path=jobs)
    with pytest.raises(SimInputError, match='two clusters are named "east"'):
        run_simulation(cluster_files=[clusters[0], clusters[0]], jobs_path=jobs)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vglobal",
            "sim",
            "run",
            "--cluster",
            str(clusters[0]),
            "--jobs",
            str(clusters[1]),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert "west.yaml: kind: SimCluster belongs in a --cluster file" in proc.stderr


def test_a_gang_the_agent_cannot_place_is_handed_back_and_tried_elsewhere(
    clusters: list[Path], tmp_path: Path
) -> None:
    """Admission counts capacity, not node labels: the agents find no node for the selector, give
    the gang back after --bind-timeout, and the hub keeps each cluster off the job for a while."""
    picky = job("picky", "default").replace(
        "    template:\n      spec: {", "    template:\n      spec: {nodeSelector: {disk: ssd}, "
    )
    path = write(tmp_path / "jobs.yaml", [picky])
    result = run_simulation(cluster_files=clusters, jobs_path=path, bind_timeout=60.0, until=200.0)
    (j,) = result["jobs"]
    hub = [
        (e["time"], e["reason"], e["message"])
        for e in j["events"]
        if e["reason"] in ("Dispatched", "Rejected")
    ]
    assert [(t, r) for t, r, _ in hub] == [
        (0.0, "Dispatched"),
        (60.0, "Rejected"),
        (60.0, "Dispatched"),
        (120.0, "Rejected"),
    ]
    assert "admitted to cluster east" in hub[0][2] and "admitted to cluster west" in hub[2][2]
    assert (j["phase"], j["cluster"], result["time"]) == ("Pending", None, 200.0)
    assert j["reason"].endswith("no candidate cluster"), j["reason"]  # both are kept off it for now


def test_the_simulated_hub_has_the_hub_defaults() -> None:
    from vglobal.config import HubSettings
    from vglobal.sim.dispatch import Rules

    hub = HubSettings.model_fields
    rules = Rules()
    assert (rules.exclude_for, rules.reclaim_interval) == (hub["exclude_for"].default, hub["reclaim_interval"].default)
    assert rules.policy == HubSettings(database_url="x").admission_policy()


@pytest.mark.parametrize("policy", ["PreemptLowerPriority", "Never"])
def test_a_never_priority_class_waits_instead_of_preempting(
    clusters: list[Path], tmp_path: Path, policy: str
) -> None:
    """A full queue: a later high-priority job preempts a lower one, unless its class says Never."""
    pc = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\nvalue: 1000\n"
        f"preemptionPolicy: {policy}\n"
    )
    docs = [pc, queue("q", extra=", capability: {nvidia.com/gpu: 16}")]
    docs += [job(f"low-{i}", "q", gpus=8, duration="2h") for i in range(2)]
    high = job("high", "q", gpus=8, extra="\n  priorityClassName: urgent").replace(
        "vglobal.io/sim-duration: 1h}", "vglobal.io/sim-duration: 1h, vglobal.io/sim-submit-at: 10m}"
    )
    docs.append(high)
    result = run_simulation(
        cluster_files=clusters, jobs_path=write(tmp_path / "jobs.yaml", docs), until=1800.0
    )
    by_name = {j["name"]: j for j in result["jobs"]}
    reasons = {n: [e["reason"] for e in j["events"]] for n, j in by_name.items()}
    victims = [n for n, r in reasons.items() if "Preempted" in r]
    if policy == "Never":
        assert victims == [] and by_name["high"]["admittedAt"] is None
        assert "capability" in by_name["high"]["reason"]
    else:
        assert len(victims) == 1 and by_name["high"]["admittedAt"] == 600.0


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, labels: {{volcano.sh/queue-name: q{extra}}}}}
spec:
  replicas: 1
  template:
    spec: {{containers: [{{name: w, image: x, resources: {{requests: {{nvidia.com/gpu: "8"}}}}}}]}}
"""


@pytest.mark.parametrize("said", ["", "true"])
def test_a_long_running_kind_is_no_victim_unless_it_says_preemptable(
    clusters: list[Path], tmp_path: Path, said: str
) -> None:
    """A full queue of Deployments: a later high-priority job preempts one only if it says so."""
    pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\nvalue: 1000\n"
    extra = f', volcano.sh/preemptable: "{said}"' if said else ""
    docs = [pc, queue("q", extra=", capability: {nvidia.com/gpu: 16}")]
    docs += [DEPLOYMENT.format(name=f"serve-{i}", extra=extra) for i in range(2)]
    high = job("high", "q", gpus=8, extra="\n  priorityClassName: urgent").replace(
        "vglobal.io/sim-duration: 1h}", "vglobal.io/sim-duration: 1h, vglobal.io/sim-submit-at: 10m}"
    )
    docs.append(high)
    result = run_simulation(
        cluster_files=clusters, jobs_path=write(tmp_path / "jobs.yaml", docs), until=1800.0
    )
    by_name = {j["name"]: j for j in result["jobs"]}
    victims = [n for n, j in by_name.items() if "Preempted" in [e["reason"] for e in j["events"]]]
    if said:
        assert len(victims) == 1 and by_name["high"]["admittedAt"] == 600.0
    else:
        assert victims == [] and by_name["high"]["admittedAt"] is None
        assert all(by_name[f"serve-{i}"]["admittedAt"] == 0.0 for i in range(2))


MIG_CLUSTER = """\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - name: {name}
    count: 1
    allocatable: {{cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "1"}}
    gpus: {{count: 1, memoryMiB: 40960, model: A100-SXM4-40GB, mig: true}}
"""
MIG_JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, annotations: {{vglobal.io/sim-duration: 1h{pin}}}}}
spec:
  tasks:
  - name: w
    replicas: 1
    template:
      metadata: {{annotations: {{volcano.sh/vgpu-mode: mig}}}}
      spec:
        containers:
        - name: w
          image: x
          resources: {{limits: {{volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "{mib}"}}}}
"""


@pytest.mark.parametrize("names", [("cut", "fresh"), ("cut",)])
def test_sim_gives_admission_the_agents_mig_cards(names: tuple[str, ...], tmp_path: Path) -> None:
    """`small` (5 GB, pinned to cut) cuts cut's card 7 x 1g.5gb; `big` (30000 MiB) fits cut's totals
    but needs an untouched card: the simulated hub sees the cards the agents report, so big goes
    to fresh once (no bounce after --bind-timeout), or waits at the hub naming the MIG constraint."""
    files = []
    for name in names:
        files.append(tmp_path / f"{name}.yaml")
        files[-1].write_text(MIG_CLUSTER.format(name=name))
    docs = [
        MIG_JOB.format(name="small", mib=4000, pin=", vglobal.io/clusters: cut"),
        MIG_JOB.format(name="big", mib=30000, pin=""),
    ]
    path = write(tmp_path / "jobs.yaml", docs)
    result = run_simulation(cluster_files=files, jobs_path=path, bind_timeout=60.0, until=300.0)
    big = next(j for j in result["jobs"] if j["name"] == "big")
    hub = [(e["reason"], e["message"]) for e in big["events"] if e["reason"] in ("Dispatched", "Rejected")]
    if "fresh" in names:
        assert [r for r, _ in hub] == ["Dispatched"] and "admitted to cluster fresh" in hub[0][1]
        assert big["cluster"] == "fresh"
    else:
        assert hub == [] and big["cluster"] is None
        assert (
            "no node in cluster cut has MIG cards with a free instance for 1 vGPU of 30000 MiB"
            in big["reason"]
        )
