"""The kube backend: the agent's Backend over a real cluster's API.

Informers (nodes, all pods, HyperNodes) feed a cache; the tracker turns the controller's calls into
writes that a pool of threads sends; a probe says whether the API server answers. Everything the
threads produce is applied on the agent's main loop in ``advance``, so the backend's state has one
owner. Pods are created in the job's namespace, owned by the job's owner ConfigMap, and bound
through ``pods/binding`` once the scheduler placed the whole gang.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vglobal.agent.backends.base import DependencyObject, JobProblem, PoolSpec, RunStart
from vglobal.agent.fabric_fetch import FabricFetcher
from vglobal.agent.kube import bodies, dra, paths, vgpu
from vglobal.agent.kube.api import KubeApi
from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.cache import POD_SLOT, ClusterCache
from vglobal.agent.kube.claims import POD_CLAIM, ClaimWriter
from vglobal.agent.kube.dependencies import check_references
from vglobal.agent.kube.health import Probe
from vglobal.agent.kube.informer import Change, Informer
from vglobal.agent.kube.namespaces import Namespaces
from vglobal.agent.kube.pod_warnings import CHECKPOINTED, PodWarnings, checkpoint_of, event_record
from vglobal.agent.kube.pools import GATE, NodePools, PoolConfig, provisioning_served
from vglobal.agent.kube.records import PodRecord, node_record, pod_record
from vglobal.agent.kube.topology import Topology, hypernode_crd_served, hypernode_doc, secret_credentials
from vglobal.agent.kube.tracker import PodTracker, TrackedPod
from vglobal.agent.kube.workload_tracker import Slot, WorkloadTracker
from vglobal.agent.kube.workloads import (
    Workload,
    WorkloadRecord,
    kind_of,
    record_of,
    served,
    served_labels,
)
from vglobal.agent.kube.writer import Op, Writer
from vglobal.agent.pods import PodManifest, PodPhase, PodStatus
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.job import Job
from vglobal.model.resources import ResourceVector
from vglobal.model.topology_sources import discovery_plan
from vglobal.scheduler.api import Grant, NodeSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KubeOptions:
    cluster: str
    labels: Mapping[str, str] = field(default_factory=dict)
    scheduler_name: str = "vglobal"
    namespaces: frozenset[str] | None = None  # None: every namespace
    create_namespaces: bool = False
    discovery: Mapping[str, Any] | None = None  # HyperNode discovery config (label, roce, ufm)
    writers: int = 8
    instance: str = ""  # this agent replica, for the events it reports
    watch_timeout: int = 300
    pools: tuple[PoolConfig, ...] = ()  # node pools it can grow (--node-pools)


class KubeBackend:
    def __init__(self, api: KubeApi, options: KubeOptions) -> None:
        self.api = api
        self.options = options
        self.writer = Writer(api, workers=options.writers)
        self.tracker = PodTracker(
            self.writer.submit,
            time.monotonic,
            scheduler_name=options.scheduler_name,
            bind_annotations=self._bind_annotations,
        )
        self.workloads = WorkloadTracker(
            self.writer.submit,
            time.monotonic,
            scheduler_name=options.scheduler_name,
            bind_notes=self._bind_notes,
        )
        self.tracker.owner_listener = self.workloads.owner_ready
        self.cache = ClusterCache(self._on_pod)
        self._dra_api = ""  # the resource.k8s.io version path served, once started
        self.claims = ClaimWriter(self.writer.submit, self.cache, lambda: self._dra_api)
        self.node_pools = NodePools(options.pools, self.writer.submit)
        self.tracker.pod_hook = lambda body, tj: self.node_pools.gate(
            self.claims.with_claims(body, tj.job.annotations, tj.ref, tj.owner_uid)
        )
        self.tracker.bind_hook = self._before_bind
        self.workloads.claim_hook = self._controller_pod_claims
        self.kinds: dict[str, Workload] = {}  # the workload kinds the cluster serves, by kind
        self.kinds_missing: list[Workload] = []
        self._labels: dict[str, str] = dict(options.labels)
        self.objects: dict[tuple[str, str, str], WorkloadRecord] = {}  # (kind, ns, name)
        plan = discovery_plan(options.discovery)
        self.fabric = FabricFetcher(plan, secret_credentials(api)) if plan.remote else None
        self.topology = Topology(options.discovery, self.fabric)
        self.probe = Probe(api)
        self._changes: queue.SimpleQueue[Change[Any]] = queue.SimpleQueue()
        self.namespaces = Namespaces(api, options.cluster, options.create_namespaces)
        self._ready: set[str] = set()  # nodes Ready when last looked
        self.informers: list[Informer[Any]] = [
            Informer(
                api, "nodes", paths.NODES, node_record, self._changes.put, watch_timeout=options.watch_timeout
            ),
            Informer(
                api,
                "pods",
                paths.ALL_PODS,
                pod_record,
                self._changes.put,
                watch_timeout=options.watch_timeout,
            ),
        ]
        self.warnings = PodWarnings(lambda uid, reason, msg: self.tracker.problem(uid, "event", reason, msg))

    # ---- life cycle

    def start(self, timeout: float = 60.0) -> None:
        """Start watching and wait until nodes, pods (and HyperNodes) were listed once."""
        self.probe.start()
        if self.options.pools:
            self.node_pools.requests = provisioning_served(self.api)
            how = "ProvisioningRequests" if self.node_pools.requests else f"pods held by the {GATE} gate"
            log.info("node pools %s grow through %s", ", ".join(self.node_pools.configs), how)
        if hypernode_crd_served(self.api):
            log.info("HyperNode CRD served: watching topology.volcano.sh HyperNodes")
            self.informers.append(
                Informer(self.api, "hypernodes", paths.HYPERNODES, hypernode_doc, self._changes.put)
            )
        elif self.options.discovery is None:
            log.info("no HyperNode CRD and no --hypernode-discovery: no network topology")
        if (dra_api := dra.served_version(self.api)) is not None:
            log.info("resource.k8s.io served: DRA devices from ResourceSlices (%s)", dra_api)
            self._dra_api = dra_api
            readers = (
                ("resourceslices", dra.slice_record),
                ("deviceclasses", dra.class_record),
                ("resourceclaims", dra.claim_record),
            )
            for name, convert in readers:
                path = f"{dra_api}/{name}"
                self.informers.append(Informer(self.api, name, path, convert, self._changes.put))
        if self.fabric is not None:
            self.fabric.start()
        core = list(self.informers)
        # Not waited for: a cluster whose RBAC does not let the agent list events still runs jobs.
        self.informers.append(Informer(self.api, "events", paths.ALL_EVENTS, event_record, self._changes.put))
        if self.node_pools.requests:  # a request that failed hands its run back at once
            self.informers.append(self.node_pools.informer(self.api, self._changes.put))
        self._watch_workloads()
        for inf in self.informers:
            inf.start()
        deadline = time.monotonic() + timeout
        for inf in core:
            if not inf.wait_synced(max(0.0, deadline - time.monotonic())):
                raise RuntimeError(
                    f"could not list {inf.name} within {timeout:g}s: {inf.state.error or 'no answer'}"
                )
        self.advance(0.0)
        self._ready = {name for name, rec in self.cache.nodes.items() if rec.ready}
        log.info(
            "cluster %s: %d nodes, %d pods", self.options.cluster, len(self.cache.nodes), len(self.cache.pods)
        )

    def _watch_workloads(self) -> None:
        """Which workload kinds the cluster serves (said in a log line and in the cluster's
        labels, which the hub shows), and an informer over the objects of each one served."""
        ok, missing = served(self.api)
        self.kinds = {k.kind: k for k in ok}
        self.kinds_missing = missing
        self._labels = {**served_labels(ok, missing), **self.options.labels}
        if missing:
            names = "; ".join(f"{k.kind} ({k.crd}: needs {k.needs})" for k in missing)
            log.warning("cluster %s cannot run these workload kinds: %s", self.options.cluster, names)
        for kind in ok:
            self.informers.append(
                Informer(
                    self.api,
                    f"wl/{kind.kind}",
                    kind.all_namespaces,
                    record_of(kind),
                    self._changes.put,
                    label_selector=kind.selector,
                    watch_timeout=self.options.watch_timeout,
                )
            )

    def wait_workloads_listed(self, timeout: float) -> None:
        """Wait (bounded) until the workload objects were listed once, and take them in."""
        deadline = time.monotonic() + timeout
        for inf in self.informers:
            if inf.name.startswith("wl/") and not inf.wait_synced(max(0.0, deadline - time.monotonic())):
                log.warning("could not list %s: %s", inf.name, inf.state.error or "no answer")
        self.advance(0.0)

    def stop(self) -> None:
        for inf in self.informers:
            inf.stop(timeout=0.1)  # a thread in a quiet watch ends with the stream or the process
        self.probe.stop()
        if self.fabric is not None:
            self.fabric.stop()
        self.writer.close()

    # ---- Backend: inventory

    @property
    def cluster_name(self) -> str:
        return self.options.cluster

    @property
    def cluster_labels(self) -> Mapping[str, str]:
        return self._labels

    def nodes(self) -> tuple[NodeSpec, ...]:
        return self.cache.specs()

    def hyper_nodes(self) -> tuple[ResolvedHyperNode, ...]:
        labels = {name: rec.spec.labels for name, rec in self.cache.nodes.items()}
        return self.topology.tree(labels, self.cache.node_version)

    def pools(self) -> tuple[PoolSpec, ...]:
        return self.node_pools.specs(self.cache.nodes)

    def grow(self, pool: str, count: int, job_uid: str = "") -> str:
        current = next((p.current for p in self.pools() if p.name == pool), 0)
        self.node_pools.grow(pool, count, current, job_uid)
        tw = self.workloads.runs.get(job_uid)
        if tw is not None:  # its pods are not the agent's own: not gated, no request for them
            return self.node_pools.unasked(tw.kind.kind)
        tj = self.tracker.jobs.get(job_uid)
        if tj is not None:
            pods = self.tracker.pods.values()
            waiting = [t.manifest for t in pods if t.manifest.job_uid == job_uid and t.bind_to is None]
            self.node_pools.request(tj.ref, tj.owner_uid, waiting)
        return ""

    def inventory_version(self) -> int:
        self.hyper_nodes()  # resolves again if nodes or HyperNodes changed
        return (self.cache.node_version << 32) + (self.node_pools.version << 20) + self.topology.version

    def free(self) -> dict[str, ResourceVector]:
        pending: dict[str, ResourceVector] = {}
        waiting = [(t.bind_to, t.manifest) for t in self.tracker.pending_binds()]
        waiting += [(s.bind_to, s.manifest) for s in self.workloads.pending_binds()]
        for node, manifest in waiting:
            assert node is not None
            pending[node] = pending.get(node, ResourceVector()) + manifest.request + POD_SLOT
        return self.cache.free(pending)

    def binds_waiting(self) -> int:
        return len(self.tracker.pending_binds()) + len(self.workloads.pending_binds())

    def reserved(self) -> Mapping[str, ResourceVector]:
        version = (self.tracker.version << 32) + self.workloads.version
        return self.cache.reserved(self.tracker.pods, version, self.workloads.by_pod)

    def api_problem(self) -> str:
        return self.probe.problem()

    # ---- Backend: jobs and pods

    def job_started(self, run: RunStart) -> None:
        ns = run.job.namespace
        allowed = self.options.namespaces
        if allowed is not None and ns not in allowed:
            listed = ",".join(sorted(allowed))
            raise ValueError(f"namespace {ns} is not one this agent runs jobs in (--namespaces {listed})")
        wanted = kind_of(run.job.raw)
        kind = self.kinds.get(wanted.kind) if wanted is not None else None
        if wanted is not None and kind is None:
            raise ValueError(
                f"cluster {self.options.cluster} does not serve {wanted.kind} ({wanted.api_version}):"
                f" it needs {wanted.needs}"
            )
        self.namespaces.ensure(ns)
        check_references(self.api, ns, run.job, run.dependencies, self.options.cluster)
        ref = JobRef(run.uid, run.generation, ns, run.job.name)
        if kind is not None:
            self.workloads.start(ref, kind, run.job)
        self.tracker.start_job(ref, run.job, run.queue, run.priority, run.objects, run.dependencies)

    def update_dependencies(self, objects: Sequence[DependencyObject]) -> None:
        self.tracker.dependencies.update(objects)

    def job_removed(self, uid: str) -> None:
        self.node_pools.remove(uid)
        self.workloads.remove(uid)
        self.tracker.remove_job(uid)

    def job_respecified(self, uid: str, job: Job) -> None:
        self.workloads.respecify(uid, job)

    def create_pod(self, pod: PodManifest) -> None:
        if pod.job_uid in self.workloads.runs:
            self.workloads.add_slot(pod)  # the workload's controller makes the pod
            return
        tj = self.tracker.jobs.get(pod.job_uid)
        if tj is None:
            raise ValueError(f"pod {pod.name}: its job {pod.job_uid} was not started")
        self.tracker.create_pod(pod, tj.ref)

    def bind_pod(self, uid: str, node: str, devices: Sequence[Grant] = ()) -> None:
        # whole GPUs (nvidia.com/gpu) are the NVIDIA device plugin's to pick; vGPUs are named
        use = tuple(_device_use(g) for g in devices if not g.whole)
        if uid in self.workloads.slots:
            self.workloads.bind(uid, node, use)
        else:
            self.tracker.bind_pod(uid, node, use)

    def delete_pod(self, uid: str) -> None:
        if uid in self.workloads.slots:
            self.workloads.delete(uid)
        else:
            self.tracker.delete_pod(uid)

    def pods(self) -> Mapping[str, PodStatus]:
        if not self.workloads.status:
            return self.tracker.status
        return PodsOfBoth(self.tracker.status, self.workloads.status)

    def take_problems(self) -> list[JobProblem]:
        return self.tracker.take_problems() + self.workloads.take_problems()

    def job_event(self, uid: str, kind: str, reason: str, message: str) -> None:
        tj = self.tracker.jobs.get(uid)
        if tj is None or not tj.owner_uid:
            return
        body = bodies.event_body(tj.ref, tj.owner_uid, kind, reason, message, self.options.instance)
        self.writer.submit(Op("event", uid, "POST", paths.events(tj.ref.namespace), body, persistent=False))

    def advance(self, now: float) -> None:
        version = self.cache.node_version
        while True:
            try:
                change = self._changes.get_nowait()
            except queue.Empty:
                break
            if change.source == "hypernodes":
                self.topology.apply(change)
            elif change.source == "events":
                for ev in change.items if change.kind == "replace" else (change.item,):
                    if ev is not None:
                        self.warnings.on_event(ev, self.cache.pods, time.monotonic())
                        if (ck := checkpoint_of(ev, self.cache.pods)) is not None:
                            said = JobProblem(ck[0], "checkpoint", CHECKPOINTED, repr(ck[1]))
                            self.tracker.problems.append(said)
            elif change.source == "provisioningrequests":
                self.tracker.problems += self.node_pools.on_change(change)
            elif change.source.startswith("wl/"):
                self._apply_objects(change)
            else:
                self.cache.apply(change)
        if self.cache.node_version != version:
            self._note_lost_nodes()
        while True:
            try:
                out = self.writer.outcomes.get_nowait()
            except queue.Empty:
                break
            try:
                if out.op.kind.startswith("wl-"):
                    self.workloads.on_outcome(out)
                elif out.op.kind.startswith("pool-"):
                    self.tracker.problems += self.node_pools.on_outcome(out)
                elif out.op.kind == POD_CLAIM:
                    self.claims.on_outcome(out)
                else:
                    self.tracker.on_outcome(out)
            except Exception:  # an answer of a shape nobody expected must not stop the agent
                log.exception("%s %s: could not use the answer", out.op.method, out.op.path)
        self.tracker.tick(time.monotonic())
        self.workloads.tick(time.monotonic())

    def _controller_pod_claims(self, job: Job, rec: PodRecord, slot: Slot) -> None:
        """A controller-made pod's DRA claims, made and allocated as its bind goes out: its
        spec is its task's template (the controller copies it)."""
        task = next((t for t in job.tasks if t.name == slot.manifest.task), None)
        spec = (task.template.get("spec") if task is not None else None) or {}
        if spec.get("resourceClaims") and slot.bind_to is not None:
            self.claims.controller_pod(
                rec.namespace, rec.name, rec.uid, spec, job.annotations, slot.bind_to, slot.manifest.uid
            )

    def _on_pod(self, before: PodRecord | None, after: PodRecord | None) -> None:
        self.tracker.on_pod(before, after)
        self.workloads.on_pod(before, after)

    def _apply_objects(self, change: Change[Any]) -> None:
        """An informer change of workload objects, as (before, after) per object."""
        kind = change.source.removeprefix("wl/")
        if change.kind == "replace":
            fresh = {(kind, r.namespace, r.name): r for r in change.items}
            gone = [k for k in self.objects if k[0] == kind and k not in fresh]
            updates: list[tuple[tuple[str, str, str], WorkloadRecord | None]] = [(k, None) for k in gone]
            updates += list(fresh.items())
        else:
            rec = change.item
            assert isinstance(rec, WorkloadRecord)
            updates = [((kind, rec.namespace, rec.name), None if change.kind == "delete" else rec)]
        for key, after in updates:
            before = self.objects.pop(key, None)
            if after is not None:
                self.objects[key] = after
            if before != after:
                self.workloads.on_object(before, after)

    def next_event_time(self) -> float | None:
        return None

    def _note_lost_nodes(self) -> None:
        """Tell each job whose pods sit on a node that stopped being Ready (or went away): its
        pods may be lost; Kubernetes evicts them later, which the job then sees as PodEvicted."""
        ready = {name for name, rec in self.cache.nodes.items() if rec.ready}
        lost = self._ready - ready
        self._ready = ready
        if not lost:
            return
        for t in self.tracker.pods.values():
            st = self.tracker.status.get(t.manifest.uid)
            if st is not None and st.node in lost and st.phase in (PodPhase.Pending, PodPhase.Running):
                why = f"pod {t.manifest.name} is on node {st.node}, which is not Ready"
                self.tracker.problems.append(JobProblem(t.manifest.job_uid, "event", "NodeNotReady", why))

    def _before_bind(self, t: TrackedPod) -> tuple[str, str, Any] | None:
        spec = t.manifest.obj.get("spec") or {}
        self.claims.allocate(t.manifest.namespace, t.manifest.name, spec, str(t.bind_to), t.ref.uid)
        return self.node_pools.ungate(t.manifest.namespace, t.manifest.name)

    def _bind_annotations(self, t: TrackedPod) -> dict[str, str]:
        assert t.bind_to is not None
        return self._bind_notes(t.manifest, t.bind_to, t.devices)

    def _bind_notes(
        self, manifest: PodManifest, node: str, devices: tuple[vgpu.DeviceUse, ...]
    ) -> dict[str, str]:
        return vgpu.bind_annotations(manifest.obj, node, self.cache.uuids(node), devices, time.time())


def _device_use(g: Grant) -> vgpu.DeviceUse:
    slot = None
    if g.instance is not None and g.geometry is not None:
        # Volcano names a MIG instance "<group>-<position>"; the scheduler's geometries carry no
        # group names, so the geometry's index names the group (vgpu.grants_of reads it back)
        slot = f"{vgpu.MIG_GROUP}{g.geometry}-{g.position}"
    return vgpu.DeviceUse(g.device, g.memory_mib, g.cores, slot)


class PodsOfBoth(Mapping[str, PodStatus]):
    """The pods the agent made and those of the workload objects, as one read-only mapping.

    A pod is in one of the two. The controller looks up every pod of every run each step, and
    ``ChainMap.get`` (a generator over its maps per lookup) was a quarter of the agent's CPU.
    """

    __slots__ = ("made", "workloads")

    def __init__(self, made: Mapping[str, PodStatus], workloads: Mapping[str, PodStatus]) -> None:
        self.made = made
        self.workloads = workloads

    def __getitem__(self, uid: str) -> PodStatus:
        found = self.made.get(uid)
        return self.workloads[uid] if found is None else found

    def get(self, uid: str, default: Any = None) -> Any:
        found = self.made.get(uid)
        return self.workloads.get(uid, default) if found is None else found

    def __contains__(self, uid: object) -> bool:
        return uid in self.made or uid in self.workloads

    def __iter__(self) -> Iterator[str]:
        yield from self.made
        yield from (uid for uid in self.workloads if uid not in self.made)

    def __len__(self) -> int:
        return len(self.made) + sum(1 for uid in self.workloads if uid not in self.made)
