"""QueueLimits messages per dispatch cycle in a simulator run (the hub's cycle and the agents' code
on a virtual clock): 3 clusters x 4 nodes of 16 cpu, 60 elastic jobs of 1-cpu pods.

    .venv/bin/python bench/queue_limits.py [--uncapped] [--seed 3]

Queues: capped (40 cpu), team (60 cpu) with two children, wide (1000 cpu, above the total), plain
and default (none); ``--uncapped`` leaves only wide's capability. Counts the messages where the
federation sends them (``Federation._send_limits``)."""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from typing import Any

from vglobal.sim import federation
from vglobal.sim.run import run_simulation

CLUSTER = """apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: c{i}}}
spec:
  nodeGroups:
  - {{name: n, count: 4, allocatable: {{cpu: "16", memory: 64Gi}}}}
"""
JOB = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: j{k}, annotations: {{vglobal.io/sim-duration: "{seconds}s"}}}}
spec:
  queue: {queue}
  minAvailable: {low}
  tasks:
  - name: w
    replicas: {replicas}
    template:
      spec: {{containers: [{{name: w, image: x, resources: {{requests: {{cpu: "1"}}}}}}]}}
"""
QUEUES = {
    "capped": '{capability: {cpu: "40"}}',
    "wide": '{capability: {cpu: "1000"}}',
    "plain": "{weight: 1}",
    "team": '{capability: {cpu: "60"}}',
    "team-a": "{parent: team}",
    "team-b": "{parent: team}",
}


def write_inputs(root: Path, seed: int, uncapped: bool) -> tuple[list[Path], Path]:
    clusters = []
    for i in range(3):
        path = root / f"c{i}.yaml"
        path.write_text(CLUSTER.format(i=i))
        clusters.append(path)
    docs = []
    for name, spec in QUEUES.items():
        if uncapped and name in ("capped", "team"):
            spec = "{weight: 1}"
        docs.append(f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {spec}\n")
    rng = random.Random(seed)
    for k in range(60):
        queue = rng.choice(["capped", "wide", "plain", "team-a", "team-b", "default"])
        replicas = rng.randint(2, 12)
        low = rng.randint(1, replicas)
        docs.append(JOB.format(k=k, seconds=rng.randint(20, 300), queue=queue, low=low, replicas=replicas))
    jobs = root / "jobs.yaml"
    jobs.write_text("---\n".join(docs))
    return clusters, jobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uncapped", action="store_true")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    counts = {"cycles": 0, "messages": 0, "entries": 0}
    cycle, send_limits = federation.Federation._cycle, federation.Federation._send_limits

    def counted_cycle(self: Any) -> None:
        counts["cycles"] += 1
        cycle(self)

    def counted_send(self: Any) -> None:
        for agent in self.agents.values():
            send = agent.send

            def counting(msg: Any, send: Any = send) -> Any:
                if msg.WhichOneof("body") == "queue_limits":
                    counts["messages"] += 1
                    counts["entries"] += len(msg.queue_limits.queues)
                return send(msg)

            agent.send = counting
        try:
            send_limits(self)
        finally:
            for agent in self.agents.values():
                del agent.send

    federation.Federation._cycle = counted_cycle  # type: ignore[method-assign]
    federation.Federation._send_limits = counted_send  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        clusters, jobs = write_inputs(Path(tmp), args.seed, args.uncapped)
        out = run_simulation(cluster_files=clusters, jobs_path=jobs)
    ends = [max((e.get("time", 0) for e in j["events"]), default=0) for j in out["jobs"]]
    unfinished = [j["name"] for j in out["jobs"] if j["phase"] != "Completed"]
    n = max(counts["cycles"], 1)
    print(
        f"cycles {counts['cycles']}, QueueLimits messages {counts['messages']} ({counts['messages'] / n:.2f} "
        f"per cycle), queue entries {counts['entries']} ({counts['entries'] / n:.2f} per cycle); last job "
        f"done {max(ends):.0f} s, mean job end {sum(ends) / len(ends):.0f} s; not completed: {unfinished}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
