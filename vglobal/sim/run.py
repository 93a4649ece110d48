"""``vglobal sim run``: the hub's admission and the agents' code on simulated clusters, virtual time.

No hub process and no database: every job, submitted at once or at the time its
``vglobal.io/sim-submit-at`` says, goes through admit() (queues, fair share, capability,
starvation, reclaim) as the hub's dispatcher runs it, then to its cluster's agent, whose job
controller and local scheduler run it (``vglobal.sim.federation``). Time jumps from one event (a
job arriving, a pod ending, a policy or bind timeout, a wait reaching the starvation or reclaim
threshold) to the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vglobal.clock import VirtualClock
from vglobal.model.errors import ManifestError
from vglobal.scheduler import DEFAULT_AGENT_CONF, parse_conf
from vglobal.sim.agents import SimAgent
from vglobal.sim.dispatch import Rules
from vglobal.sim.federation import Federation, SimulationError
from vglobal.sim.inputs import SimInputError, Submission, load_clusters, load_workload
from vglobal.sim.report import report

MAX_STEPS = 1_000_000  # a guard against rules that never let time settle


def run_simulation(
    *,
    cluster_files: Sequence[Path],
    jobs_path: Path,
    scheduler_conf: Path | None = None,
    until_idle: bool = True,
    until: float | None = None,
    rules: Rules | None = None,
    bind_timeout: float | None = None,
) -> dict[str, Any]:
    """Run to idle (nothing left that can change) or to virtual time ``until``, then report.

    Raises SimInputError for bad input (naming the file and field), SimulationError if the run
    does not settle."""
    clusters = load_clusters(cluster_files)
    conf = DEFAULT_AGENT_CONF
    if scheduler_conf is not None:
        try:
            conf = parse_conf(scheduler_conf.read_text())
        except ValueError as exc:
            raise SimInputError(f"{scheduler_conf}: {exc}") from None
    clock = VirtualClock()
    try:
        agents = [SimAgent(c, clock, conf, bind_timeout=bind_timeout) for c in clusters]
    except ManifestError as exc:  # a HyperNode tree that does not resolve
        raise SimInputError(f"SimCluster: {exc}") from None
    # An auto-split HyperJob is split over the clusters as they start.
    workload = load_workload(jobs_path, {a.name: a.snap() for a in agents})
    fed = Federation(agents, workload.queue_snaps(), rules or Rules(), clock)
    arrivals = _Arrivals(workload.submissions)
    samples = _Samples(fed)
    for _ in range(MAX_STEPS):
        fed.submit(arrivals.due(clock.now()))
        fed.settle()
        samples.take()
        times = [t for t in (fed.next_event_time(), arrivals.next_time()) if t is not None]
        if not times or (not until_idle and until is None):
            break  # idle: no job to come, no pod to end, no timeout due, no wait to cross a threshold
        nxt = min(times)
        if until is not None and nxt > until:
            clock.advance_to(max(clock.now(), until))
            fed.dirty = bool(fed.dispatcher.pending)
            fed.settle()
            samples.take()
            break
        clock.advance_to(nxt)
        fed.dirty = bool(fed.dispatcher.pending)  # waits crossed a threshold, exclusions ran out
    else:
        raise SimulationError(f"still changing after {MAX_STEPS} events (t={clock.now():g}s); pass --until")
    result = report(fed, clock.now(), samples.by_queue)
    if workload.skipped:
        result["skipped"] = list(workload.skipped)
    return result


class _Arrivals:
    """Submissions in time order (file order within one instant)."""

    def __init__(self, submissions: Sequence[Submission]) -> None:
        self._todo = sorted(submissions, key=lambda s: s.at)
        self._next = 0

    def due(self, now: float) -> list[Submission]:
        start = self._next
        while self._next < len(self._todo) and self._todo[self._next].at <= now:
            self._next += 1
        return self._todo[start : self._next]

    def next_time(self) -> float | None:
        return self._todo[self._next].at if self._next < len(self._todo) else None


class _Samples:
    """Per queue, its allocation (its own and its children's admitted jobs) each time it changed."""

    def __init__(self, fed: Federation) -> None:
        self.fed = fed
        self.by_queue: dict[str, list[tuple[float, dict[str, int]]]] = {
            q.name: [] for q in fed.dispatcher.queues
        }

    def take(self) -> None:
        d = self.fed.dispatcher
        parent = {q.name: q.parent for q in d.queues}
        rolled: dict[str, dict[str, int]] = {name: {} for name in self.by_queue}
        for name in self.by_queue:
            node: str | None = name
            while node in rolled:
                acc = rolled[node]
                for r, v in d.allocated(name).items():
                    acc[r] = acc.get(r, 0) + v
                node = parent[node]
        now = self.fed.clock.now()
        for name, samples in self.by_queue.items():
            if not samples or samples[-1][1] != rolled[name]:
                samples.append((now, rolled[name]))
