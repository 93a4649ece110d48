"""A table case from another scheduler's tests, run through admission over several cycles.

A case gives the nodes of one cluster (or several), the queues, the jobs already running (each pod
on its node, with its own preemptable flag and priority where the source gives one) and the jobs that
arrive. The running jobs are admitted in a first cycle and their pods reported where the case puts
them; then cycles run with no new input: an admitted job's gang is placed at once on the first nodes
(by name) with room, pods taken by an eviction go at once, a job taken whole stops and waits again.
What a case asserts is where that settles: the pods and jobs taken, the jobs that run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vglobal.admission import AdmissionPolicy, AdmissionResult, ClusterSnap, NodeSnap, QueueSnap
from vglobal.admission.inputs import JobFacts
from vglobal.admission.snapshot import HyperNodeSnap
from vglobal.model.forms import POD_SLOT
from vglobal.model.preemptable import preemption_policy
from vglobal.model.resources import ResourceVector
from vglobal.sim.dispatch import Dispatcher, Rules

MAX_CYCLES = 200
POD_SLOTS = 110  # a node's pod slots where the case gives none (the kubelet's default)


def r(cpu: str | int = 0, mem: str | int = 0, gpu: str | int = 0, **more: str | int) -> ResourceVector:
    """A request as Kubernetes writes it ("1", "500m", "1G", "3Gi"); zero amounts are left out. A
    pod's request also takes one pod slot of its node, as the hub counts it (model/forms.py)."""
    q = {"cpu": cpu, "memory": mem, "nvidia.com/gpu": gpu, **more}
    return ResourceVector.from_quantities({k: str(v) for k, v in q.items() if str(v) not in ("0", "")})


def _slot(vec: ResourceVector) -> ResourceVector:
    return vec + POD_SLOT


@dataclass(frozen=True)
class Pod:
    """A pod running on ``node``."""

    name: str
    node: str
    request: ResourceVector
    preemptable: bool = True  # False: annotated volcano.sh/preemptable: "false"
    priority: int | None = None  # its own PriorityClass value; None = its job's


@dataclass(frozen=True)
class Running:
    name: str
    queue: str
    pods: tuple[Pod, ...]
    priority: int = 0
    min_available: int | None = None  # None: every pod
    created: float = 0.0
    cluster: str = "c1"


@dataclass(frozen=True)
class Pending:
    """A job that arrives: ``pods`` of ``request`` each (or ``shapes``: (request, count) per task)."""

    name: str
    queue: str
    request: ResourceVector = field(default_factory=ResourceVector)
    pods: int = 1
    priority: int = 0
    min_available: int | None = None  # None: every pod
    created: float = 100.0
    preemption_policy: str = "PreemptLowerPriority"
    topology: tuple[str, int | None] | None = None
    shapes: tuple[tuple[ResourceVector, int], ...] = ()
    preemptable: bool = True  # False: every pod annotated volcano.sh/preemptable: "false"
    # Per task, its pod template's own spec.preemptionPolicy (None: it sets none, the class's holds).
    task_policies: tuple[str | None, ...] = ()

    def tasks(self) -> tuple[tuple[ResourceVector, int], ...]:
        return tuple((_slot(v), n) for v, n in self.shapes or ((self.request, self.pods),))


def nodes(prefix: str, count: int, alloc: ResourceVector) -> dict[str, ResourceVector]:
    return {f"{prefix}{i}": alloc for i in range(1, count + 1)}


def _gang(tasks: Sequence[tuple[ResourceVector, int]], min_available: int | None) -> tuple[tuple[ResourceVector, int], ...]:
    """The first ``min_available`` pods in task order (Volcano's minResources)."""
    left = sum(n for _, n in tasks) if min_available is None else min_available
    out = []
    for vec, n in tasks:
        take = min(n, left)
        if take:
            out.append((vec, take))
        left -= take
    return tuple(out)


def _total(gang: Iterable[tuple[ResourceVector, int]]) -> ResourceVector:
    out = ResourceVector()
    for vec, n in gang:
        out = out + vec.scale(n)
    return out


def _running_facts(job: Running) -> JobFacts:
    """One task per pod, so that a pod's flags are its own."""
    shapes = [(_slot(p.request), 1) for p in job.pods]
    gang = _gang(shapes, job.min_available)
    return JobFacts(
        uid=job.name,
        namespace="c1",
        name=job.name,
        queue=job.queue,
        priority=job.priority,
        created=job.created,
        request=_total(shapes),
        gang=gang,
        min_request=_total(gang),
        pod_requests={p.name: _slot(p.request) for p in job.pods},
        allowed=None,
        selector={},
        topology=None,
        min_available=sum(n for _, n in gang),
        unpreemptable=frozenset(p.name for p in job.pods if not p.preemptable),
        task_priorities={p.name: p.priority for p in job.pods if p.priority is not None},
        tasks=tuple(p.name for p in job.pods),
    )


def _pending_facts(job: Pending) -> JobFacts:
    tasks = job.tasks()
    gang = _gang(tasks, job.min_available)
    return JobFacts(
        uid=job.name,
        namespace="c1",
        name=job.name,
        queue=job.queue,
        priority=job.priority,
        created=job.created,
        request=_total(tasks),
        gang=gang,
        min_request=_total(gang),
        pod_requests={str(i): vec for i, (vec, _) in enumerate(tasks)},
        allowed=None,
        selector={},
        topology=job.topology,
        min_available=sum(n for _, n in gang),
        preemption_policy=preemption_policy(
            job.preemption_policy, [p for p in job.task_policies if p is not None], len(tasks)
        ),
        unpreemptable=frozenset() if job.preemptable else frozenset(str(i) for i in range(len(tasks))),
        tasks=tuple(str(i) for i in range(len(tasks))),
    )


@dataclass
class Outcome:
    evicted: set[str]  # pods taken, by name (every pod of a job taken whole)
    taken: set[str]  # jobs any of whose pods were taken
    running: set[str]  # jobs placed at the end
    results: list[AdmissionResult]

    def pods_evicted(self) -> list[str]:
        return sorted(self.evicted)


class Case:
    """One cluster of ``nodes`` (or ``clusters``: name -> nodes), ``queues``, ``running`` jobs, then
    ``pending`` ones; ``rules``: AdmissionPolicy or Rules fields over Volcano-like defaults (reclaim
    at once, no minimum runtime, no reclaim rate limit, no cap on admissions per cycle)."""

    def __init__(
        self,
        queues: Sequence[QueueSnap],
        nodes: Mapping[str, ResourceVector] | None = None,
        running: Sequence[Running] = (),
        pending: Sequence[Pending] = (),
        *,
        clusters: Mapping[str, Mapping[str, ResourceVector]] | None = None,
        hypernodes: Mapping[str, Sequence[HyperNodeSnap]] | None = None,
        **rules: Any,
    ) -> None:
        given = clusters or {"c1": dict(nodes or {})}
        self.node_sets = {
            c: {n: v if "pods" in v else v + ResourceVector({"pods": POD_SLOTS}) for n, v in ns.items()}
            for c, ns in given.items()
        }
        self.hypernodes = dict(hypernodes or {})
        self.alloc = {(c, n): vec for c, ns in self.node_sets.items() for n, vec in ns.items()}
        self.free = dict(self.alloc)
        base = {"max_admissions": 0, "reclaim_after": 0.0, "reclaim_min_runtime": 0.0, "reclaim_limit": 0.0}
        fields = AdmissionPolicy.__dataclass_fields__
        policy = AdmissionPolicy(**{**base, **{k: v for k, v in rules.items() if k in fields}})
        extra = {k: v for k, v in rules.items() if k not in fields}
        self.d = Dispatcher(list(queues), Rules(policy, **extra))
        self.now = 1000.0
        self.pods: dict[str, list[dict[str, Any]]] = {}  # job -> its placed pods (PodPlacement JSON)
        self.evicted: set[str] = set()
        self.taken: set[str] = set()
        self.results: list[AdmissionResult] = []
        self._setup(running)
        for job in pending:
            self.d.submit(_pending_facts(job), waiting_since=self.now)
        self.shapes = {j.name: j.tasks() for j in pending}

    def _snaps(self) -> list[ClusterSnap]:
        out = []
        for c, ns in self.node_sets.items():
            snaps = tuple(NodeSnap(n, self.free[c, n], vec) for n, vec in sorted(ns.items()))
            out.append(ClusterSnap(c, {}, snaps, True, tuple(self.hypernodes.get(c, ()))))
        return out

    def _setup(self, running: Sequence[Running]) -> None:
        """The running jobs, admitted and with their pods where the case says."""
        for job in running:
            self.d.submit(_running_facts(job), waiting_since=job.created)
        if not running:
            return
        first = self.d.cycle(self.now, self._snaps())
        wrong = {a.uid: a.cluster for a in first.admitted} != {j.name: j.cluster for j in running}
        if wrong or first.reclaimed or first.evictions:
            raise AssertionError(f"the running jobs were not all admitted as given: {first.result.decisions}")
        for job in running:
            placed = [
                {"pod": p.name, "uid": p.name, "task": p.name, "node": p.node, "phase": "Running"}
                for p in job.pods
            ]
            for p in job.pods:
                self._take(job.cluster, p.node, _slot(p.request))
            self.pods[job.name] = placed
            self.d.report(job.name, placed, started=True)
        self.now += 1.0

    def _take(self, cluster: str, node: str, vec: ResourceVector) -> None:
        left = self.free[cluster, node] - vec
        assert all(v >= 0 for v in left.values()), f"{node} cannot hold {vec}"
        self.free[cluster, node] = left

    def _give(self, cluster: str, node: str, vec: ResourceVector) -> None:
        self.free[cluster, node] = self.free[cluster, node] + vec

    def _request(self, job: str, task: str) -> ResourceVector:
        return self.d.jobs[job].pod_requests.get(task, ResourceVector())

    def _place(self, uid: str, cluster: str) -> bool:
        """The gang's pods, biggest first, each on the first node by name with room; a hard-topology
        gang inside the first HyperNode (by name) of a tier it allows that holds it all."""
        topo = self.d.jobs[uid].topology
        if topo is None or topo[0] != "hard":
            return self._place_on(uid, cluster, sorted(self.node_sets[cluster]))
        limit = topo[1]
        for hn in sorted(self.hypernodes.get(cluster, ()), key=lambda h: (h.tier, h.name)):
            if (limit is None or hn.tier <= limit) and self._place_on(uid, cluster, sorted(hn.nodes)):
                return True
        return False

    def _place_on(self, uid: str, cluster: str, names: list[str]) -> bool:
        gang = self.d.jobs[uid].gang
        placed: list[dict[str, Any]] = []
        order = sorted(range(len(gang)), key=lambda i: sorted(gang[i][0].items()), reverse=True)
        for i in order:
            vec, count = gang[i]
            for k in range(count):
                node = next((n for n in names if vec.fits_in(self.free[cluster, n])), None)
                if node is None:
                    for p in placed:
                        self._give(cluster, p["node"], self._request(uid, p["task"]))
                    return False
                self._take(cluster, node, vec)
                pod = f"{uid}-{i}-{k}"
                placed.append({"pod": pod, "uid": pod, "task": str(i), "node": node, "phase": "Running"})
        self.pods[uid] = placed
        self.d.report(uid, placed, started=True)
        return True

    def step(self) -> AdmissionResult:
        cycle = self.d.cycle(self.now, self._snaps())
        # Victims go first: the agent evicts, then binds what was admitted into the room.
        for victim in cycle.reclaimed:
            for p in self.pods.pop(victim.uid, []):
                self._give(victim.cluster, p["node"], self._request(victim.uid, p["task"]))
                self.evicted.add(p["pod"])
            self.taken.add(victim.uid)
        for e in cycle.evictions:
            gone = set(e.pods)
            keep = []
            for p in self.pods.get(e.job_uid, []):
                if p["uid"] in gone:
                    self._give(e.cluster, p["node"], self._request(e.job_uid, p["task"]))
                    self.evicted.add(p["pod"])
                else:
                    keep.append(p)
            self.pods[e.job_uid] = keep
            self.taken.add(e.job_uid)
            self.d.report(e.job_uid, keep, started=True)
        for a in cycle.admitted:
            if not self._place(a.uid, a.cluster):
                self.d.withdraw(a.uid)
        self.results.append(cycle.result)
        self.now += 1.0
        return cycle.result

    def run(self, cycles: int = 8, *, quiet: int = 4) -> Outcome:
        """At least ``cycles`` cycles, and on until ``quiet`` cycles in a row admit and take nothing
        (at most MAX_CYCLES in all: a case that never settles fails)."""
        calm = 0
        for k in range(MAX_CYCLES):
            got = self.step()
            busy = got.admitted_order or got.reclaims or got.evictions
            calm = 0 if busy else calm + 1
            if k + 1 >= cycles and calm >= quiet:
                break
        else:
            raise AssertionError(f"still admitting or taking after {MAX_CYCLES} cycles")
        running = {uid for uid, pods in self.pods.items() if pods and uid in self.d.running}
        return Outcome(set(self.evicted), set(self.taken), running, self.results)

    def finish(self, *uids: str) -> None:
        for uid in uids:
            run = self.d.running.get(uid)
            for p in self.pods.pop(uid, []):
                if run is not None:
                    self._give(run.cluster, p["node"], self._request(uid, p["task"]))
            self.d.finish(uid)

    def submit(self, *jobs: Pending) -> None:
        for job in jobs:
            self.d.submit(_pending_facts(job), waiting_since=self.now)

    def usage(self, queue: str) -> ResourceVector:
        return self.d.allocated(queue)


def queue(name: str, weight: int = 1, **kw: Any) -> QueueSnap:
    return QueueSnap(name, weight=weight, **kw)


def hypernode(name: str, tier: int, nodes: Iterable[str], parent: str | None = None) -> HyperNodeSnap:
    return HyperNodeSnap(name, tier, parent, tuple(nodes))


__all__ = ["Case", "Outcome", "Pending", "Pod", "Running", "hypernode", "nodes", "queue", "r", "replace"]
