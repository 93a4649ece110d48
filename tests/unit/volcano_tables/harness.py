"""Volcano's scheduler test tables through the federation: the hub's admission, then the agent.

A case is written as Volcano's ``uthelper.TestCommonStruct`` writes it: nodes, PodGroups, pods
(some already on nodes), queues, plugin tiers and what the session must do (binds, evictions,
pipelined tasks). ``run_case`` takes it through the path a job takes in vglobal:

1. every PodGroup becomes a Volcano Job (``parse_job``: one task per run of alike pods) and every
   Queue a Queue (``parse_queue``), validated as the hub validates them;
2. the hub's dispatcher (``vglobal.sim.dispatch.Dispatcher``, the in-memory twin of the hub's)
   holds the PodGroups that already have pods on nodes as admitted jobs, and the others as pending
   jobs; ``admit()`` runs over the cluster as the agent reports it (free = allocatable minus the
   pods on each node);
3. each admitted job reaches the agent as a run whose pods are Pending; each reclaimed one is
   stopped there (its pods on nodes are evictions); the agent's scheduler snapshot is built by the
   agent's own ``cluster_snapshot`` and one session of the case's conf runs over it;
4. binds become Running pods and are reported back; the next hub cycle runs, and so on until a
   hub cycle changes nothing.

Pod and PodGroup names in a case are Volcano's (``"c1/p1"``, ``"pg1"``); the outcome speaks them too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from vglobal import convert
from vglobal.admission import AdmissionPolicy, Admit, ClusterSnap, HyperNodeSnap, NodeSnap, Wait
from vglobal.agent.pods import PodManifest, PodPhase, PodStatus
from vglobal.agent.run import JobRun
from vglobal.agent.snapshot import cluster_snapshot, dispatch_queue_specs
from vglobal.model.forms import POD_SLOT
from vglobal.model.hypernode import ResolvedHyperNode
from vglobal.model.job import Job, parse_job
from vglobal.model.queue import parse_queue
from vglobal.model.queue_affinity import NODE_GROUP_MODE_LABEL
from vglobal.model.records import QueueRow
from vglobal.model.resources import EMPTY, ResourceVector
from vglobal.scheduler import NodeSpec, QueueSpec, Taint, node_group_mode, parse_conf, run_cycle
from vglobal.sim.dispatch import Dispatcher, Rules
from vglobal.sim.inputs import Submission, Workload

CLUSTER = "member"
NOW = datetime(2026, 1, 1, tzinfo=UTC)  # the queues' creation time (not read)
ROUNDS = 6  # hub cycles at most; a case that needs more does not settle
TASK_SPEC = "volcano.sh/task-spec"  # Volcano's pod annotation naming the pod's task (role)


@dataclass(frozen=True)
class Node:
    name: str
    cpu: str = "4"
    memory: str = "8Gi"
    pods: int = 110
    labels: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)  # scalar resources, e.g. nvidia.com/gpu
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False

    def allocatable(self) -> ResourceVector:
        return ResourceVector.from_quantities(
            {"cpu": self.cpu, "memory": self.memory, "pods": self.pods, **self.extra}
        )


@dataclass(frozen=True)
class Pod:
    ref: str  # "namespace/name", as Volcano's BuildPod names it
    group: str  # the PodGroup's name (same namespace)
    cpu: str = "1"
    memory: str = "1G"
    node: str | None = None  # set: the pod is Running there (Bound if phase says so)
    phase: str = "Running"  # for a pod with a node: Running or Bound
    role: str = ""  # volcano.sh/task-spec
    selector: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)  # BuildPod's labels (volcano.sh/preemptable)
    annotations: Mapping[str, str] = field(default_factory=dict)
    priority_class: str | None = None  # the pod's own priorityClassName
    preemption_policy: str | None = None  # the pod's spec.preemptionPolicy
    affinity: Mapping[str, Any] | None = None  # the pod's spec.affinity

    @property
    def namespace(self) -> str:
        return self.ref.split("/")[0]

    def request(self) -> dict[str, str]:
        return {k: v for k, v in {"cpu": self.cpu, "memory": self.memory, **self.extra}.items() if v != "0"}

    def shape(self) -> tuple[Any, ...]:
        """Pods of one shape can be replicas of one task."""
        return (
            self.role,
            tuple(sorted(self.request().items())),
            tuple(sorted(self.selector.items())),
            tuple(sorted(self.labels.items())),
            tuple(sorted(self.annotations.items())),
            self.priority_class,
            self.preemption_policy,
            repr(self.affinity),
        )


@dataclass(frozen=True)
class Group:
    name: str
    namespace: str = "c1"
    queue: str = "c1"
    min_member: int = 0
    task_min: Mapping[str, int] = field(default_factory=dict)  # minTaskMember by role
    priority_class: str | None = None
    phase: str = "Inqueue"  # of a PodGroup with pods on nodes already (Inqueue or Running)
    topology: tuple[str, int | None] | None = None  # (mode, highestTierAllowed)


@dataclass(frozen=True)
class Queue:
    name: str
    weight: int = 1
    capability: Mapping[str, str] | None = None
    deserved: Mapping[str, str] | None = None
    guarantee: Mapping[str, str] | None = None
    parent: str | None = None
    reclaimable: bool | None = None
    priority: int = 0
    state: str | None = None  # Open (unset) or Closed
    annotations: Mapping[str, str] = field(default_factory=dict)
    affinity: Mapping[str, Any] | None = None  # spec.affinity (nodeGroupAffinity / AntiAffinity)

    def manifest(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"weight": self.weight, "priority": self.priority}
        for key in ("capability", "deserved", "parent", "reclaimable", "state", "affinity"):
            if getattr(self, key) is not None:
                spec[key] = getattr(self, key)
        if self.guarantee is not None:
            spec["guarantee"] = {"resource": dict(self.guarantee)}
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": self.name, "annotations": dict(self.annotations)},
            "spec": spec,
        }


@dataclass(frozen=True)
class HyperNode:
    name: str
    tier: int
    members: tuple[str, ...]  # nodes at tier 1, HyperNodes above


@dataclass
class Case:
    go: str  # "allocate_test.go TestAllocate"
    name: str  # the Go case's Name
    nodes: Sequence[Node]
    groups: Sequence[Group]
    pods: Sequence[Pod]
    queues: Sequence[Queue]
    conf: str
    binds: Mapping[str, str] | None = None  # pod ref -> node, over the whole run
    evicted: Sequence[str] | None = None
    pipelined: Mapping[str, str] | None = None
    waiting: Sequence[str] | None = None  # PodGroups the hub keeps waiting at the end
    binds_count: int | None = None  # Volcano's MinimalBindCheck: how many binds, wherever
    # Volcano's ExpectBindNumsInHyperNode: binds per tier-1 HyperNode that got any, most first
    binds_per_hypernode: Sequence[int] | None = None
    classes: Mapping[str, int] = field(default_factory=dict)  # PriorityClass name -> value
    never: frozenset[str] = frozenset()  # PriorityClasses with preemptionPolicy: Never
    hyper_nodes: Sequence[HyperNode] = ()
    rules: Rules = field(default_factory=lambda: Rules(AdmissionPolicy(max_admissions=0)))
    differs: str = ""  # where vglobal decides otherwise on purpose: why (the expectation is ours)
    pending: str = ""  # a Volcano outcome that waits for a feature: strict xfail with this reason

    @property
    def id(self) -> str:
        return f"{self.go.split()[-1]}: {self.name}"


@dataclass
class Outcome:
    binds: dict[str, str] = field(default_factory=dict)
    evicted: list[str] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)  # PodGroup -> the hub's reason
    admitted: list[str] = field(default_factory=list)  # PodGroups, in the order admitted


def conf(actions: str, *tiers: Sequence[str | Mapping[str, Any]]) -> str:
    """A volcano-scheduler.conf text; a plugin is a name or a mapping with name/flags/arguments."""
    doc = {
        "actions": actions,
        "tiers": [{"plugins": [p if isinstance(p, Mapping) else {"name": p} for p in t]} for t in tiers],
    }
    return yaml.safe_dump(doc, sort_keys=False)


# ---- the case as the hub and the agent receive it


def _tasks(case: Case, group: Group) -> list[tuple[str, list[Pod]]]:
    """Consecutive pods of one shape form one task (Volcano's pods carry no task otherwise)."""
    pods = [p for p in case.pods if p.group == group.name and p.namespace == group.namespace]
    out: list[tuple[str, list[Pod]]] = []
    for p in pods:
        if out and out[-1][1][0].shape() == p.shape():
            out[-1][1].append(p)
        else:
            out.append((p.role or f"t{len(out)}", [p]))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):  # one role in several shapes: number them apart
        out = [(f"{n}{i}", ps) for i, (n, ps) in enumerate(out)]
    return out


def _job_manifest(case: Case, group: Group) -> dict[str, Any]:
    tasks = []
    for name, pods in _tasks(case, group):
        p = pods[0]
        spec: dict[str, Any] = {
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": p.request()}}]
        }
        if p.selector:
            spec["nodeSelector"] = dict(p.selector)
        if p.priority_class:
            spec["priorityClassName"] = p.priority_class
        if p.preemption_policy:
            spec["preemptionPolicy"] = p.preemption_policy
        if p.affinity:
            spec["affinity"] = dict(p.affinity)
        tasks.append(
            {
                "name": name,
                "replicas": len(pods),
                # Volcano's PodGroup carries minTaskMember only for the roles it names.
                "minAvailable": min(group.task_min.get(p.role, 0), len(pods)),
                "template": {
                    "metadata": {"labels": dict(p.labels), "annotations": dict(p.annotations)},
                    "spec": spec,
                },
            }
        )
    spec = {"queue": group.queue, "minAvailable": group.min_member, "tasks": tasks}
    if group.priority_class:
        spec["priorityClassName"] = group.priority_class
    if group.topology is not None:
        mode, tier = group.topology
        spec["networkTopology"] = (
            {"mode": mode} if tier is None else {"mode": mode, "highestTierAllowed": tier}
        )
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": group.name, "namespace": group.namespace},
        "spec": spec,
    }


@dataclass
class _Member:
    """What the harness keeps per PodGroup: its Job, its pods by Go ref, and its agent run."""

    uid: str
    group: Group
    job: Job
    priority: int
    pods: dict[str, tuple[str, str]]  # Go ref -> (task, index)
    run: JobRun | None = None


def _resolved(hyper_nodes: Sequence[HyperNode]) -> tuple[ResolvedHyperNode, ...]:
    parent = {m: h.name for h in hyper_nodes if h.tier > 1 for m in h.members}
    by_name = {h.name: h for h in hyper_nodes}

    def leaves(h: HyperNode) -> frozenset[str]:
        if h.tier == 1:
            return frozenset(h.members)
        return frozenset().union(*(leaves(by_name[m]) for m in h.members))

    return tuple(
        ResolvedHyperNode(
            name=h.name,
            tier=h.tier,
            parent=parent.get(h.name),
            children=h.members if h.tier > 1 else (),
            nodes=leaves(h),
        )
        for h in hyper_nodes
    )


class _Federation:
    def __init__(self, case: Case) -> None:
        self.case = case
        self.conf = parse_conf(case.conf)
        if not {"enqueue", "allocate"} & set(self.conf.actions):
            # A job the hub dispatches reaches the agent Pending; an agent's conf moves it on with
            # enqueue (as the default conf does), which Volcano's action tests leave out.
            self.conf = replace(self.conf, actions=("enqueue", *self.conf.actions))
        self.nodes = tuple(
            NodeSpec(n.name, n.allocatable(), dict(n.labels), n.taints, n.unschedulable) for n in case.nodes
        )
        self.hyper = _resolved(case.hyper_nodes)
        queues = [parse_queue(q.manifest()) for q in case.queues]
        self.queue_rows = {
            q.name: QueueRow(
                q.name, q.parent, q.weight, q.priority, q.state, q.reclaimable, None, None, {}, q.raw, NOW
            )
            for q in queues
        }
        self.dispatcher = Dispatcher(Workload(tuple(queues), ()).queue_snaps(), case.rules)
        self.members: dict[str, _Member] = {}
        self.by_ref: dict[str, _Member] = {}
        self.seq = 0
        # Volcano's test PodGroups carry no creation time, so its ties go by UID (namespace/name):
        # the groups are submitted in that order.
        for i, group in enumerate(sorted(case.groups, key=lambda g: f"{g.namespace}/{g.name}")):
            job = parse_job(_job_manifest(case, group))
            uid = f"{i:04d}-{group.namespace}-{group.name}"
            priority = case.classes.get(group.priority_class or "", 0)
            refs = {p.ref: (task, k) for task, pods in _tasks(case, group) for k, p in enumerate(pods)}
            m = self.members[uid] = _Member(uid, group, job, priority, refs)
            self.by_ref.update({ref: m for ref in refs})
            # the hub takes its PriorityClass's policy, and each task's own class's value
            policy = "Never" if group.priority_class in case.never else None
            self.dispatcher.submit(Submission(uid, job, priority, 0.0, policy, case.classes).facts(float(i)))
            placed = [p for p in case.pods if p.ref in refs and p.node]
            if placed:  # admitted in an earlier cycle: on the cluster already
                self.dispatcher._admit(uid, CLUSTER, 0.0)
                m.run = self._run(m)
                m.run.podgroup_phase = group.phase
                for p in placed:
                    phase = PodPhase.Running if p.phase == "Running" else PodPhase.Pending
                    self._set(m, p.ref, phase, p.node)
                self._report(m)

    # the agent's side

    def _run(self, m: _Member) -> JobRun:
        self.seq += 1
        run = JobRun(m.uid, 1, m.job, m.job.queue, m.priority, self.seq, 0.0)
        run.task_priorities = self._task_priorities(m)
        run.queues = self._chain(m.job.queue)
        tasks = {t.name: t for t in m.job.tasks}
        for ref, (task, index) in m.pods.items():
            t = tasks[task]
            name = f"{m.job.name}-{task}-{index}"
            obj = {"metadata": dict(t.template.get("metadata") or {}), "spec": t.template.get("spec") or {}}
            run.pods[name] = PodManifest(ref, name, m.job.namespace, m.uid, task, index, t.pod_request, obj)
            run.status[name] = PodStatus(ref, PodPhase.Pending)
        return run

    def _chain(self, queue: str) -> tuple[QueueSpec, ...]:
        """The job's queue and its ancestors as the hub's Dispatch carries them (from the stored
        Queue manifests) and the agent takes them in."""
        return dispatch_queue_specs(convert.dispatch_queues(queue, self.queue_rows, CLUSTER))

    def _task_priorities(self, m: _Member) -> dict[str, int]:
        """As the hub sends them: the value of each task's own PriorityClass."""
        classes = self.case.classes
        return {t.name: classes[c] for t in m.job.tasks if (c := t.priority_class_name) in classes}

    def _set(self, m: _Member, ref: str, phase: PodPhase, node: str | None) -> None:
        assert m.run is not None
        task, index = m.pods[ref]
        m.run.status[f"{m.job.name}-{task}-{index}"] = PodStatus(ref, phase, node)

    def _report(self, m: _Member) -> None:
        """What the agent reports (its pods with their nodes), taken in as the hub takes it."""
        assert m.run is not None
        pods = [
            {"pod": name, "task": m.run.pods[name].task, "node": st.node, "phase": str(st.phase), "uid": st.uid}
            for name, st in m.run.status.items()
            if st.node
        ]
        self.dispatcher.report(m.uid, pods, started=bool(pods))

    def runs(self) -> list[JobRun]:
        return [m.run for m in self.members.values() if m.run is not None]

    def cluster(self) -> ClusterSnap:
        """The cluster as its agent reports it: per node, allocatable minus the pods there."""
        used: dict[str, ResourceVector] = {}
        for run in self.runs():
            for name, st in run.status.items():
                if st.node:
                    used[st.node] = used.get(st.node, EMPTY) + run.pods[name].request + POD_SLOT
        blocked = {n.name for n in self.case.nodes if n.unschedulable or n.taints}
        nodes = tuple(
            NodeSnap(
                n.name,
                EMPTY if n.name in blocked else (n.allocatable - used.get(n.name, EMPTY)).pos(),
                n.allocatable,
                dict(n.labels),
            )
            for n in sorted(self.nodes, key=lambda n: n.name)
        )
        hyper = tuple(HyperNodeSnap(h.name, h.tier, h.parent, tuple(sorted(h.nodes))) for h in self.hyper)
        mode = node_group_mode(self.conf)  # the label the agent registers with
        return ClusterSnap(CLUSTER, {NODE_GROUP_MODE_LABEL: mode} if mode else {}, nodes, True, hyper)

    def session(self, out: Outcome) -> None:
        runs = self.runs()
        if not runs:
            return
        result = run_cycle(cluster_snapshot(self.nodes, runs, self.hyper), self.conf)
        for ref, node in result.binds.items():
            self._set(self.by_ref[ref], ref, PodPhase.Running, node)
            out.binds[ref] = node
        for ref in result.evictions:
            self._set(self.by_ref[ref], ref, PodPhase.Pending, None)  # its controller makes it anew
            out.evicted.append(ref)
        for run in runs:
            run.pipelined = {
                uid: node
                for uid, node in result.pipelined.items()
                if uid in self.by_ref and self.by_ref[uid].uid == run.uid
            }
            run.podgroup_phase = result.podgroup_phases.get(run.uid, run.podgroup_phase)
        out.pipelined = dict(result.pipelined)
        for m in self.members.values():
            if m.run is not None:
                self._report(m)

    # the hub's side

    def hub_cycle(self, now: float, out: Outcome) -> bool:
        cycle = self.dispatcher.cycle(now, [self.cluster()])
        for e in cycle.result.evictions:  # single pods: the agent evicts them, the job runs on
            m = self.members[e.job_uid]
            assert m.run is not None
            for ref in e.pods:
                self._set(m, ref, PodPhase.Pending, None)  # its controller makes it anew
                task, index = m.pods[ref]
                m.run.held.add(f"{m.job.name}-{task}-{index}")  # as the agent's controller.evict does
                out.evicted.append(ref)
            self._report(m)
        for victim in cycle.reclaimed:  # the agent stops the victim: its pods on nodes are evicted
            m = self.members[victim.uid]
            assert m.run is not None
            out.evicted += [st.uid for st in m.run.status.values() if st.node]
            m.run = None
        for a in cycle.admitted:
            m = self.members[a.uid]
            m.run = self._run(m)
            decision = cycle.result.decisions[a.uid]
            if isinstance(decision, Admit):  # as the Dispatch carries them
                m.run.nominated = decision.nominated
            out.admitted.append(m.group.name)
        out.waiting = {
            self.members[uid].group.name: d.reason
            for uid, d in cycle.result.decisions.items()
            if isinstance(d, Wait)
        }
        return bool(cycle.admitted or cycle.reclaimed)


def run_case(case: Case) -> Outcome:
    fed = _Federation(case)
    out = Outcome()
    for i in range(ROUNDS):
        changed = fed.hub_cycle(10.0 + i, out)
        if i > 0 and not changed:
            return out
        fed.session(out)
    raise AssertionError(f"{case.id}: the hub still changes its decisions after {ROUNDS} cycles")


def check(case: Case) -> Outcome:
    """Run the case and compare with what it expects; a failure says what the hub said."""
    out = run_case(case)
    why = f"{case.id}: hub waits: {out.waiting}; admitted {out.admitted}"
    if case.binds is not None:
        assert out.binds == dict(case.binds), f"binds {out.binds} != {dict(case.binds)}; {why}"
    if case.binds_count is not None:
        assert len(out.binds) == case.binds_count, f"binds {out.binds}: not {case.binds_count}; {why}"
    if case.binds_per_hypernode is not None:
        leaf = {n: h.name for h in case.hyper_nodes if h.tier == 1 for n in h.members}
        per: dict[str, int] = {}
        for node in out.binds.values():
            per[leaf[node]] = per.get(leaf[node], 0) + 1
        got = sorted(per.values(), reverse=True)
        assert got == list(case.binds_per_hypernode), f"binds per HyperNode {per}; {why}"
    if case.evicted is not None:
        assert sorted(out.evicted) == sorted(case.evicted), f"evicted {out.evicted}; {why}"
    if case.pipelined is not None:
        assert out.pipelined == dict(case.pipelined), f"pipelined {out.pipelined}; {why}"
    if case.waiting is not None:
        assert sorted(out.waiting) == sorted(case.waiting), f"waiting {sorted(out.waiting)}; {why}"
    return out


def params(cases: Sequence[Case]) -> list[Any]:
    """pytest params, one per case, named after its Go test and case; pending ones strictly xfail."""
    out = []
    for c in cases:
        marks = (
            [pytest.mark.volcano_pending, pytest.mark.xfail(strict=True, reason=c.pending)]
            if c.pending
            else []
        )
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out
