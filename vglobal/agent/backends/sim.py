"""The sim backend: nodes from a SimCluster, pods that run for their annotated duration.

A pod bound to a node is Running at once, runs for ``vglobal.io/sim-duration`` (absent = forever),
then exits with ``vglobal.io/sim-exit-code`` (default 0 = Succeeded, else Failed with that code).
A running pod of a job with ``vglobal.io/checkpoint-interval`` saves its work every interval of its
run: its status then names the last such time (what a workload's checkpoint annotation says on kube).
A node group with ``autoscale`` grows when asked: its new nodes appear ``provisionDelay`` later on
the backend's clock, as a cluster autoscaler's would.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from vglobal.agent.backends.base import DependencyObject, JobProblem, PoolSpec, RunStart
from vglobal.agent.backends.sim_cluster import SimCluster, SimNode, SimPool, pool_node
from vglobal.agent.pods import FINISHED_POD_PHASES, PodManifest, PodPhase, PodStatus
from vglobal.model.cluster_topology import cluster_hyper_nodes
from vglobal.model.duration import parse_duration
from vglobal.model.errors import Problems
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.job import Job
from vglobal.model.queue_tuning import checkpoint_interval
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import Grant, NodeSpec, Taint
from vglobal.scheduler.devices import GPUS_EXTENSION, gpus_from_spec, vgpu_capacity

DURATION_ANNOTATION = "vglobal.io/sim-duration"
EXIT_CODE_ANNOTATION = "vglobal.io/sim-exit-code"
_POD_SLOT = ResourceVector({"pods": 1})


def _devices(n: SimNode) -> tuple[ResourceVector, dict[str, object]]:
    """GPUs with memory become a device list, plus the vGPU capacity the device plugin registers."""
    if n.gpus is None or n.gpus.count <= 0:
        return n.allocatable, {}
    devices = gpus_from_spec(n.gpus.count, n.gpus.memory_mib, n.gpus.model, n.gpus.mig, n.name)
    extra = {k: v for k, v in vgpu_capacity(devices).items() if k not in n.allocatable}
    return n.allocatable + extra, {GPUS_EXTENSION: devices}


def node_specs(nodes: Sequence[SimNode]) -> tuple[NodeSpec, ...]:
    out = []
    for n in nodes:
        allocatable, extensions = _devices(n)
        out.append(
            NodeSpec(
                name=n.name,
                allocatable=allocatable,
                labels=dict(n.labels),
                taints=tuple(
                    Taint(
                        key=t.get("key", ""), value=t.get("value", ""), effect=t.get("effect", "NoSchedule")
                    )
                    for t in n.taints
                ),
                extensions=extensions,
            )
        )
    return tuple(out)


def pod_runtime(annotations: Mapping[str, str]) -> tuple[float | None, int]:
    """(duration in seconds or None for forever, exit code) from a pod's annotations."""
    raw = annotations.get(DURATION_ANNOTATION)
    duration = parse_duration(raw) if raw else None
    code = int(annotations.get(EXIT_CODE_ANNOTATION, "0") or 0)
    return duration, code


@dataclass(slots=True)
class _SimPod:
    manifest: PodManifest
    status: PodStatus
    duration: float | None
    exit_code: int


class SimBackend:
    def __init__(self, cluster: SimCluster, *, name: str | None = None) -> None:
        self._name = name or cluster.name
        self._labels = dict(cluster.labels)
        self._cluster = cluster
        self._sim_nodes = list(cluster.nodes)
        self._nodes = node_specs(self._sim_nodes)
        # resolved here first: a bad HyperNode manifest is an error in the cluster file (ManifestError)
        self._hyper_nodes = self._resolve_topology()
        self._alloc = {n.name: n.allocatable for n in self._nodes}
        self._used: dict[str, ResourceVector] = {n.name: ResourceVector() for n in self._nodes}
        self._pods: dict[str, _SimPod] = {}
        # every pod's status, kept as they change: pods() copies it (a plain dict copy), where a
        # pass over the pods cost a soak's agent, asking several times a cycle with tens of
        # thousands of ended pods kept, more than its scheduling
        self._statuses: dict[str, PodStatus] = {}
        self._ends: list[tuple[float, str, str]] = []  # (end time, pod name, uid), lazily pruned
        self._now = 0.0
        # The ConfigMaps and Secrets the hub sent with jobs, by (namespace, kind, name)
        self.objects: dict[tuple[str, str, str], DependencyObject] = {}
        self._pools: dict[str, SimPool] = {p.name: p for p in cluster.pools}
        self._size = {p.name: p.count for p in cluster.pools}  # nodes each pool has, up or coming
        self._coming: list[tuple[float, str, str]] = []  # (up at, pool, node name), a heap
        self._version = 0
        self._intervals: dict[str, float] = {}  # job uid -> its declared checkpoint interval
        self._saving: dict[str, float] = {}  # running pods that checkpoint: uid -> next checkpoint

    def _resolve_topology(self) -> tuple[ResolvedHyperNode, ...]:
        c = self._cluster
        return cluster_hyper_nodes(c.hyper_nodes, c.discovery, {n.name: n.labels for n in self._sim_nodes})

    @property
    def cluster_name(self) -> str:
        return self._name

    @property
    def cluster_labels(self) -> Mapping[str, str]:
        return self._labels

    def nodes(self) -> tuple[NodeSpec, ...]:
        return self._nodes

    def hyper_nodes(self) -> tuple[ResolvedHyperNode, ...]:
        return self._hyper_nodes

    def inventory_version(self) -> int:
        return self._version  # moves when a pool's nodes come up

    def pools(self) -> tuple[PoolSpec, ...]:
        out = []
        for p in self._pools.values():
            coming = sum(1 for _, pool, _ in self._coming if pool == p.name)
            out.append(
                PoolSpec(
                    name=p.name,
                    allocatable=node_specs([p.node])[0].allocatable,
                    labels=dict(p.node.labels),
                    current=self._size[p.name] - coming,
                    max=p.max,
                    provision_seconds=p.provision_seconds,
                    coming=coming,
                )
            )
        return tuple(out)

    def grow(self, pool: str, count: int, job_uid: str = "") -> str:
        p = self._pools.get(pool)
        if p is None:
            raise ValueError(f'no node pool "{pool}" to grow')
        if self._size[pool] + count > p.max:
            raise ValueError(f'node pool "{pool}" has {self._size[pool]} of at most {p.max} nodes')
        for _ in range(count):
            name = f"{pool}-{self._size[pool]}"
            self._size[pool] += 1
            heapq.heappush(self._coming, (self._now + p.provision_seconds, pool, name))
        return ""

    def _nodes_up(self) -> None:
        """The pools' nodes whose provisioning delay has passed join the cluster."""
        up = False
        while self._coming and self._coming[0][0] <= self._now:
            _, pool, name = heapq.heappop(self._coming)
            node = pool_node(self._pools[pool].node, name)
            self._sim_nodes.append(node)
            (spec,) = node_specs([node])
            self._alloc[name] = spec.allocatable
            self._used[name] = ResourceVector()
            up = True
        if up:
            self._nodes = node_specs(self._sim_nodes)
            self._hyper_nodes = self._resolve_topology()
            self._version += 1

    def free(self) -> dict[str, ResourceVector]:
        return {name: self._alloc[name] - self._used[name] for name in self._alloc}

    def reserved(self) -> Mapping[str, ResourceVector]:
        return {}  # every simulated pod is the agent's

    def binds_waiting(self) -> int:
        return 0  # a simulated bind lands at once

    def api_problem(self) -> str:
        return ""

    def job_started(self, run: RunStart) -> None:
        # the job plugins' objects live in the run; its dependencies stay, as in a cluster
        for o in run.dependencies:
            self.objects[(o.namespace, o.kind, o.name)] = o
        interval = checkpoint_interval(Problems(), run.job.annotations)  # checked at submit
        if interval > 0:
            self._intervals[run.uid] = interval

    def update_dependencies(self, objects: Sequence[DependencyObject]) -> None:
        for o in objects:
            if (o.namespace, o.kind, o.name) in self.objects:
                self.objects[(o.namespace, o.kind, o.name)] = o

    def job_removed(self, uid: str) -> None:
        self._intervals.pop(uid, None)

    def job_respecified(self, uid: str, job: Job) -> None:
        pass  # the run's pods are the sim's: the job controller adds and removes them

    def take_problems(self) -> list[JobProblem]:
        return []

    def job_event(self, uid: str, kind: str, reason: str, message: str) -> None:
        pass  # the run's own events are all there is

    def create_pod(self, pod: PodManifest) -> None:
        if pod.uid in self._pods:
            raise ValueError(f"pod {pod.uid} exists")
        duration, code = pod_runtime(pod.annotations)
        self._pods[pod.uid] = _SimPod(pod, PodStatus(uid=pod.uid, phase=PodPhase.Pending), duration, code)
        self._statuses[pod.uid] = self._pods[pod.uid].status

    def bind_pod(self, uid: str, node: str, devices: Sequence[Grant] = ()) -> None:
        pod = self._pods[uid]
        if pod.status.node is not None:
            raise ValueError(f"pod {pod.manifest.name} is already on {pod.status.node}")
        if node not in self._alloc:
            raise ValueError(f"no node {node}")
        self._used[node] = self._used[node] + pod.manifest.request + _POD_SLOT
        running = replace(pod.status, phase=PodPhase.Running, node=node, started=self._now)
        pod.status = self._statuses[uid] = running
        interval = self._intervals.get(pod.manifest.job_uid)
        if interval is not None:
            self._saving[uid] = self._now + interval
        if pod.duration is not None:
            heapq.heappush(self._ends, (self._now + pod.duration, pod.manifest.name, uid))

    def delete_pod(self, uid: str) -> None:
        pod = self._pods.pop(uid, None)
        if pod is not None:
            self._release(pod)
            del self._statuses[uid]

    def _release(self, pod: _SimPod) -> None:
        node = pod.status.node
        if node is not None and pod.status.phase not in FINISHED_POD_PHASES:
            self._used[node] = self._used[node] - pod.manifest.request - _POD_SLOT

    def pods(self) -> Mapping[str, PodStatus]:
        return dict(self._statuses)

    def pod_named(self, namespace: str, name: str) -> tuple[PodManifest, PodStatus] | None:
        """The latest incarnation of a pod by name. Safe from a log stream's thread: the table is
        copied in one step (atomic under the GIL) and the entries' fields are replaced, not mutated."""
        found = None
        for pod in list(self._pods.values()):
            m = pod.manifest
            if m.name == name and m.namespace == namespace:
                found = (m, pod.status)
        return found

    def advance(self, now: float) -> None:
        self._now = max(self._now, now)
        self._nodes_up()
        self._checkpoints()
        while self._ends and self._ends[0][0] <= self._now:
            end, _, uid = heapq.heappop(self._ends)
            pod = self._pods.get(uid)
            if pod is None or pod.status.phase != PodPhase.Running:
                continue
            self._release(pod)
            phase = PodPhase.Succeeded if pod.exit_code == 0 else PodPhase.Failed
            pod.status = self._statuses[uid] = replace(
                pod.status, phase=phase, exit_code=pod.exit_code, finished=end
            )

    def _checkpoints(self) -> None:
        """Running pods whose next checkpoint is due take it: the last one due, not each missed."""
        for uid, due in list(self._saving.items()):
            pod = self._pods.get(uid)
            if pod is None or pod.status.phase != PodPhase.Running:
                del self._saving[uid]
                continue
            if due > self._now:
                continue
            interval = self._intervals.get(pod.manifest.job_uid, 0.0)
            if interval <= 0:
                del self._saving[uid]
                continue
            last = due + (self._now - due) // interval * interval
            pod.status = self._statuses[uid] = replace(pod.status, checkpointed=last)
            self._saving[uid] = last + interval

    def next_event_time(self) -> float | None:
        up = self._coming[0][0] if self._coming else None
        if self._saving:
            due = min(self._saving.values())
            up = due if up is None else min(up, due)
        while self._ends:
            end, _, uid = self._ends[0]
            pod = self._pods.get(uid)
            if pod is not None and pod.status.phase == PodPhase.Running:
                return end if up is None else min(end, up)
            heapq.heappop(self._ends)
        return up
