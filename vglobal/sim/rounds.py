"""admit() round after round with its decisions applied at once, for admission tests and trace benches.

The hub's side is the in-memory ``Dispatcher``; the agents' side is a ``Placer``: by default
``FirstFitNodes``, which puts an admitted gang's pods, biggest first, each on the first node (by
name) with room, as a stand-in for the agents where their own scheduler is not what is measured.
``vglobal sim run`` uses the agents' real code instead (``vglobal.sim.federation``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from vglobal.admission import AdmissionPolicy, AdmissionResult, ClusterSnap, Gang, PendingJob, QueueSnap
from vglobal.model.resources import EMPTY, ResourceVector
from vglobal.sim.dispatch import Dispatcher, Rules


class Placer(Protocol):
    def clusters(self) -> Iterable[ClusterSnap]:
        """Every cluster with its nodes' free capacity now."""
        ...

    def place(self, cluster: str, gang: Gang) -> Mapping[str, ResourceVector] | None:
        """Take room for the whole gang on ``cluster``: per node, what it takes; None = it does not
        fit (and nothing was taken)."""
        ...

    def release(self, cluster: str, placements: Mapping[str, ResourceVector]) -> None: ...


class FirstFitNodes:
    def __init__(self, clusters: Sequence[ClusterSnap]) -> None:
        self._clusters = {c.name: c for c in clusters}
        self.free = {c.name: {n.name: n.free for n in c.nodes} for c in clusters}
        self._order = {c.name: sorted(self.free[c.name]) for c in clusters}

    def clusters(self) -> Iterable[ClusterSnap]:
        for name, c in self._clusters.items():
            free = self.free[name]
            nodes = tuple(n if n.free == free[n.name] else replace(n, free=free[n.name]) for n in c.nodes)
            self._clusters[name] = c = replace(c, nodes=nodes)
            yield c

    def place(self, cluster: str, gang: Gang) -> Mapping[str, ResourceVector] | None:
        free = self.free[cluster]
        taken: dict[str, ResourceVector] = {}
        for pod, count in sorted(gang, key=lambda s: sorted(s[0].items()), reverse=True):
            for _ in range(count):
                node = next((n for n in self._order[cluster] if pod.fits_in(free[n])), None)
                if node is None:
                    self.release(cluster, taken)
                    return None
                free[node] = free[node] - pod
                taken[node] = taken.get(node, EMPTY) + pod
        return taken

    def release(self, cluster: str, placements: Mapping[str, ResourceVector]) -> None:
        free = self.free[cluster]
        for node, vec in placements.items():
            free[node] = free[node] + vec


@dataclass
class AdmissionRounds:
    """Each ``step`` is one dispatch cycle at ``now``; admitted jobs are placed at once (a gang the
    placer cannot hold is counted in ``rejected`` and waits on as before), reclaimed jobs stop and
    wait again; ``finish`` ends running jobs."""

    dispatcher: Dispatcher
    placer: Placer
    now: float = 1000.0
    results: list[AdmissionResult] = field(default_factory=list)
    placements: dict[str, Mapping[str, ResourceVector]] = field(default_factory=dict)
    rejected: int = 0

    @classmethod
    def of(
        cls,
        queues: Sequence[QueueSnap],
        clusters: Sequence[ClusterSnap],
        pending: Sequence[PendingJob] = (),
        *,
        now: float = 1000.0,
        **rules: object,
    ) -> AdmissionRounds:
        """Over first-fit nodes; ``rules`` are AdmissionPolicy or Rules fields (the hub's defaults
        otherwise, except no limit on admissions per cycle)."""
        policy = {k: rules.pop(k) for k in AdmissionPolicy.__dataclass_fields__ if k in rules}
        merged = AdmissionPolicy(**{"max_admissions": 0, **policy})  # type: ignore[arg-type]
        dispatcher = Dispatcher(queues, Rules(merged, **rules))  # type: ignore[arg-type]
        dispatcher.submit(*pending)
        return cls(dispatcher, FirstFitNodes(clusters), now)

    @property
    def rules(self) -> Rules:
        return self.dispatcher.rules

    def submit(self, *jobs: PendingJob) -> None:
        self.dispatcher.submit(*jobs)

    def step(self, advance: float = 1.0) -> AdmissionResult:
        d = self.dispatcher
        cycle = d.cycle(self.now, self.placer.clusters())
        # Admissions first: they were decided on the nodes as they are, before any victim stops.
        for a in cycle.admitted:
            placed = self.placer.place(a.cluster, d.jobs[a.uid].gang)
            if placed is None:
                self.rejected += 1
                d.withdraw(a.uid)
                continue
            self.placements[a.uid] = placed
            d.report(a.uid, placed, started=True)
        for victim in cycle.reclaimed:
            self.placer.release(victim.cluster, self.placements.pop(victim.uid, {}))
        self.results.append(cycle.result)
        self.now += advance
        return cycle.result

    def finish(self, *uids: str) -> None:
        for uid in uids:
            run = self.dispatcher.finish(uid)
            if run is not None:
                self.placer.release(run.cluster, self.placements.pop(uid, {}))

    def usage(self, queue: str) -> ResourceVector:
        return self.dispatcher.allocated(queue)
