"""Seeded scenarios run through ``vglobal sim run`` and through a hub with agents, and what of their
outcome must agree: where each job runs (or that it waits), the pods the agents evicted, and the
hub's victim events.

A scenario has two waves. The first fills the clusters with low-priority work, much of it elastic
gangs (minAvailable below replicas), some with a task annotated ``volcano.sh/preemptable: "false"``;
the second, once the first runs, asks for room: a higher-priority job of the same queue
(preemption), a job of a queue below its deserved share (reclaim), or a HyperJob. Pods run until
stopped, so nothing ends by itself and the outcome is a state both reach and keep.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

CPU_PER_NODE = 4
NODES = 2
_EVICTED = re.compile(r"pod (\S+) was evicted")
VICTIM_EVENTS = ("Preempted", "Preempting", "Reclaimed", "Reclaiming")

CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def sim_cluster(name: str) -> str:
    return f"""
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}}}
spec:
  nodeGroups:
  - name: {name}
    count: {NODES}
    allocatable: {{cpu: "{CPU_PER_NODE}", memory: 64Gi, pods: "110"}}
"""


def _queue(name: str, deserved: int | None) -> str:
    spec = "{weight: 1}" if deserved is None else f'{{weight: 1, deserved: {{cpu: "{deserved}"}}}}'
    return (
        f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    )


def _task(name: str, replicas: int, cpu: int, *, pinned: bool = False) -> str:
    meta = '\n      metadata: {annotations: {volcano.sh/preemptable: "false"}}' if pinned else ""
    return f"""
  - name: {name}
    replicas: {replicas}
    template:{meta}
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]"""


def _job(name: str, queue: str, cls: str, min_available: int, tasks: str, step: int) -> str:
    return f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  annotations: {{vglobal.io/sim-submit-at: {step}s}}
spec:
  queue: {queue}
  minAvailable: {min_available}
  priorityClassName: {cls}
  tasks:{tasks}
"""


def _hyperjob(name: str, queue: str, replicas: int, pods: int, cpu: int, step: int) -> str:
    return f"""apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {{name: {name}, annotations: {{vglobal.io/sim-submit-at: {step}s}}}}
spec:
  replicatedJobs:
  - name: part
    replicas: {replicas}
    templateSpec:
      queue: {queue}
      priorityClassName: high
      tasks:{_task("w", pods, cpu).replace(chr(10), chr(10) + "    ")}
"""


@dataclass
class Scenario:
    seed: int
    kind: str  # preempt, reclaim or hyperjob
    clusters: tuple[str, ...]
    queues: str
    # (name, manifest), one submission a step: the first wave, then the second; submission k is at
    # k seconds in the simulation, and the hub takes each once it showed the outcome of the one
    # before (jobs submitted together would be told apart by their random uids at the hub)
    first: list[tuple[str, str]] = field(default_factory=list)
    second: list[tuple[str, str]] = field(default_factory=list)

    @property
    def steps(self) -> list[tuple[str, str]]:
        return [*self.first, *self.second]

    def jobs_file(self) -> str:
        """Everything for the simulation."""
        return "---\n".join([self.queues, CLASSES, *(m for _, m in self.steps)])

    def describe(self) -> str:
        return f"seed {self.seed} ({self.kind}, clusters {', '.join(self.clusters)})\n" + self.jobs_file()


def scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    kind = ("preempt", "reclaim", "hyperjob")[seed % 3]
    clusters = ("c1", "c2") if kind == "hyperjob" or rng.random() < 0.5 else ("c1",)
    total = len(clusters) * NODES * CPU_PER_NODE
    if kind == "reclaim":
        queues = _queue("qa", total // 2) + "---\n" + _queue("qb", total // 2)
        first_queue, second_queue, second_class = "qa", "qb", "low"
    else:
        queues = _queue("q", None)
        first_queue, second_queue, second_class = "q", "q", "high"
    s = Scenario(seed, kind, clusters, queues)
    room = total
    i = 0
    while room > -2:  # the first wave asks for a little more than there is
        cpu = rng.choice((1, 1, 2))
        replicas = rng.randint(2, 4)
        pinned = rng.random() < 0.25
        tasks = (_task("p", 1, cpu, pinned=True) if pinned else "") + _task("w", replicas, cpu)
        pods = replicas + (1 if pinned else 0)
        min_available = rng.randint(2 if pinned else 1, max(2, pods // 2))  # mostly elastic
        name = f"first-{i}"
        s.first.append((name, _job(name, first_queue, "low", min_available, tasks, i)))
        room -= pods * cpu
        i += 1
    if kind == "hyperjob":
        name = "hj"
        s.second.append((name, _hyperjob(name, "q", len(clusters), rng.randint(1, 3), 1, i)))
    else:
        for k in range(rng.randint(1, 2)):
            cpu = rng.choice((1, 2))
            replicas = rng.randint(1, 3)
            name = f"second-{k}"
            tasks = _task("w", replicas, cpu)
            s.second.append((name, _job(name, second_queue, second_class, replicas, tasks, i + k)))
    return s


# ---- outcomes


@dataclass(frozen=True)
class Outcome:
    """Per job: its cluster (None: it waits), its pods holding a node (pod -> node), the pods its
    agent evicted, and how many victim events of each kind the hub wrote for it."""

    jobs: Mapping[str, tuple[str | None, tuple[tuple[str, str], ...], tuple[str, ...], tuple[str, ...]]]

    def admissions(self) -> dict[str, str | None]:
        return {name: got[0] for name, got in self.jobs.items()}


def _evicted(events: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(
        sorted(m.group(1) for reason, msg in events if reason == "PodEvicted" and (m := _EVICTED.match(msg)))
    )


def _victims(reasons: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(r for r in reasons if r in VICTIM_EVENTS))


def sim_outcome(report: Mapping[str, Any]) -> Outcome:
    """From ``vglobal sim run``'s JSON."""
    jobs = {}
    for j in report["jobs"]:
        events = [(e["reason"], e["message"]) for e in j["events"]]
        pods = tuple(
            sorted((p["name"], p["node"]) for p in j["pods"] if p["node"] and p["phase"] == "Running")
        )
        jobs[j["name"]] = (j["cluster"], pods, _evicted(events), _victims(r for r, _ in events))
    return Outcome(jobs)


def hub_outcome(client: Any, names: Iterable[str]) -> Outcome:
    """From the hub's API: each job, its placements and its events (the agents' and the hub's)."""
    jobs = {}
    for name in names:
        job = client.get_job(name)
        cluster = job.cluster if job.binding_phase != "Suspended" and job.cluster else None
        pods = tuple(sorted((p.pod, p.node) for p in job.placements if p.node and p.phase == "Running"))
        events = [(e.reason, e.message) for e in client.explain_job(name).events]
        hub = [e.reason for e in client.explain_job(name).events if not e.source.startswith("agent/")]
        jobs[name] = (cluster, pods, _evicted(events), _victims(hub))
    return Outcome(jobs)
