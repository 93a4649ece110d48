"""``vglobal sim run`` with fair share over time: a queue that ran alone for hours yields first."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from vglobal.admission import AdmissionPolicy
from vglobal.cli.sim import sim
from vglobal.sim.dispatch import Rules
from vglobal.sim.run import run_simulation

CLUSTER = """\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: c}
spec:
  nodeGroups:
  - {name: g, count: 8, allocatable: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "8"}}
"""
# Not reclaimable: the order in which the queues' jobs are admitted is what is shown, not reclaim
# evening the queues out to their deserved shares once each runs pods (the hub reclaims single
# pods of a running job at once).
QUEUES = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: a}
spec: {weight: 1, reclaimable: false}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: b}
spec: {weight: 1, reclaimable: false}
"""


def _job(name: str, queue: str, at: str, duration: str) -> str:
    return f"""\
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  annotations: {{vglobal.io/sim-submit-at: {at}, vglobal.io/sim-duration: {duration}}}
spec:
  queue: {queue}
  tasks:
  - name: w
    replicas: 1
    template:
      spec: {{containers: [{{name: w, image: x, resources: {{requests: {{nvidia.com/gpu: "8"}}}}}}]}}
"""


def _files(tmp_path: Path) -> tuple[Path, Path]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    jobs = tmp_path / "jobs.yaml"
    # a runs 16 of the 64 GPUs alone for 8 hours; then a and b each submit 8 jobs of 8 GPUs at once
    text = QUEUES + "".join(_job(f"early-{k}", "a", "0s", "8h") for k in range(2))
    text += "".join(_job(f"{q}-{k}", q, "8h1m", "1h") for q in "ab" for k in range(8))
    jobs.write_text(text)
    return cluster, jobs


def _gpus_at(result: dict[str, object], queue: str, t: float) -> int:
    (q,) = [q for q in result["queues"] if q["name"] == queue]  # type: ignore[attr-defined]
    held = [units.get("nvidia.com/gpu", 0) for at, units in q["samples"] if at <= t]
    return int(held[-1]) if held else 0


def test_the_queue_that_ran_alone_goes_after_the_one_that_did_not(tmp_path: Path) -> None:
    cluster, jobs = _files(tmp_path)
    start = 8 * 3600.0 + 60
    # half-life 4 h: a's 8 hours at 16 GPUs decay to an allocation of 12 GPUs, both deserve 32:
    # b's jobs go first (8/32, 16/32), a's next at (12 + 8)/32 comes before b's third at 24/32,
    # then they alternate: b ends with 5 of the 8 places, a with 3
    decayed = run_simulation(
        cluster_files=[cluster], jobs_path=jobs, rules=Rules(AdmissionPolicy(fair_share_half_life=4 * 3600.0))
    )
    assert (_gpus_at(decayed, "a", start), _gpus_at(decayed, "b", start)) == (24, 40)
    # instantaneous fair share (today's): both hold nothing at 8h1m, so they split evenly
    today = run_simulation(cluster_files=[cluster], jobs_path=jobs, rules=Rules())
    assert (_gpus_at(today, "a", start), _gpus_at(today, "b", start)) == (32, 32)
    # every job ran in both
    assert {j["phase"] for j in decayed["jobs"]} == {"Completed"} == {j["phase"] for j in today["jobs"]}


def test_sim_run_takes_the_hub_flags(tmp_path: Path) -> None:
    cluster, jobs = _files(tmp_path)
    out = CliRunner().invoke(
        sim,
        [
            "run", "--cluster", str(cluster), "--jobs", str(jobs), "--fair-share-half-life", "4h",
            "--reclaim-limit", "0.1", "--reclaim-interval", "10m",
        ],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    bad = CliRunner().invoke(
        sim, ["run", "--cluster", str(cluster), "--jobs", str(jobs), "--reclaim-limit", "-1"]
    )
    assert bad.exit_code == 2 and "--reclaim-limit" in bad.output
