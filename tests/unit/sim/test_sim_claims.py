"""``run_simulation`` (what ``vglobal sim run`` runs, with the agents' own scheduler): the reclaim
livelock settles. Queue a (memory-heavy, below its deserved cpu) reclaims two of b's cpu-heavy
jobs; b comes first in the order (its priority). Without a claim on the freed room the next cycle
gave it back to b's re-queued jobs and a reclaimed again, for ever ("nothing settles")."""

from __future__ import annotations

from pathlib import Path

from vglobal.sim.run import run_simulation

CLUSTER = """\
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: c}
spec:
  nodeGroups:
  - {name: n, count: 2, allocatable: {cpu: "8", memory: 64Gi, pods: "110"}}
"""
QUEUES = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: a}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: b}
spec: {weight: 1, priority: 1}
"""
JOB = """\
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %(name)s, annotations: {vglobal.io/sim-submit-at: %(at)s, vglobal.io/sim-duration: 10m}}
spec:
  queue: %(queue)s
  minAvailable: 1
  tasks:
  - name: w
    replicas: 1
    template:
      spec: {containers: [{name: w, image: x, resources: {requests: {cpu: "%(cpu)d", memory: %(mem)dGi}}}]}
"""


def _job(name: str, queue: str, cpu: int, mem: int, at: str) -> str:
    return JOB % {"name": name, "queue": queue, "cpu": cpu, "mem": mem, "at": at}


def test_the_reclaim_livelock_settles_and_b_jobs_restart_once(tmp_path: Path) -> None:
    (cluster := tmp_path / "c.yaml").write_text(CLUSTER)
    jobs = QUEUES + _job("a0", "a", 1, 56, "0s")
    jobs += "".join(_job(f"b{k:02d}", "b", 1, 1, "1s") for k in range(15))
    jobs += _job("a1", "a", 2, 56, "2s")
    (path := tmp_path / "jobs.yaml").write_text(jobs)
    out = run_simulation(cluster_files=[cluster], jobs_path=path)
    got = {j["name"]: j for j in out["jobs"]}
    assert got["a1"]["phase"] == "Completed"
    assert got["a1"]["admittedAt"] < 60  # into the room it freed, at once
    reclaimed = [
        e for j in out["jobs"] for e in j.get("events", []) if e.get("reason") == "Reclaimed"
    ]
    assert 0 < len(reclaimed) <= 2, reclaimed  # two of b's jobs, once
