"""A small table builder in the style of Volcano's ``uthelper.TestCommonStruct``.

A case lists nodes, pod groups, pods and queues plus a conf; ``run()`` executes one session and
``check()`` compares binds (``"ns/pod" -> node``), evictions, pipelined tasks and PodGroup phases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vglobal.model.resources import ResourceVector
from vglobal.scheduler import (
    ClusterSnapshot,
    CycleResult,
    JobSpec,
    NodeSpec,
    QueueSpec,
    Taint,
    TaskSpec,
    TaskStatus,
    parse_conf,
    run_cycle,
)


def res(cpu: str | int = 0, memory: str | int = 0, **scalars: str | int) -> ResourceVector:
    quantities: dict[str, Any] = {"cpu": cpu, "memory": memory}
    quantities.update({k.replace("_", "/").replace("__", "."): v for k, v in scalars.items()})
    return ResourceVector.from_quantities({k: v for k, v in quantities.items() if v not in (0, "0")})


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
    extra: Mapping[str, str] | None = None,
) -> NodeSpec:
    alloc = ResourceVector.from_quantities({"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})})
    return NodeSpec(name, alloc, labels=dict(labels or {}), taints=tuple(taints), unschedulable=unschedulable)


@dataclass(frozen=True)
class Pod:
    ref: str  # "namespace/name"
    group: str
    cpu: str = "1"
    memory: str = "1G"
    status: TaskStatus = TaskStatus.Pending
    node: str | None = None
    priority: int = 1
    role: str = "w"
    extra: Mapping[str, str] = field(default_factory=dict)
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def spec(self, job_uid: str) -> TaskSpec:
        namespace, name = self.ref.split("/")
        tail = name.rsplit("-", 1)[-1]
        request = ResourceVector.from_quantities(
            {
                k: v
                for k, v in {"cpu": self.cpu, "memory": self.memory, **self.extra}.items()
                if v not in ("0", 0)
            }
        )
        return TaskSpec(
            uid=self.ref,
            name=name,
            job_uid=job_uid,
            role=self.role,
            index=int(tail) if tail.isdigit() else 0,
            request=request,
            status=self.status,
            node=self.node,
            priority=self.priority,
            namespace=namespace,
            **self.kwargs,
        )


def pod(ref: str, group: str, cpu: str = "1", memory: str = "1G", **kw: Any) -> Pod:
    known = {"status", "node", "priority", "role", "extra"}
    return Pod(
        ref,
        group,
        cpu,
        memory,
        **{k: v for k, v in kw.items() if k in known},
        kwargs={k: v for k, v in kw.items() if k not in known},
    )


@dataclass(frozen=True)
class Group:
    name: str  # "namespace/name"
    queue: str = "c1"
    min_member: int = 0
    phase: str = "Inqueue"
    priority: int = 0
    creation: int | None = None
    task_min: Mapping[str, int] | None = None
    min_resources: ResourceVector | None = None
    preemption_policy: str = "PreemptLowerPriority"


def queue(name: str, weight: int = 1, **kw: Any) -> QueueSpec:
    return QueueSpec(name, weight=weight, **kw)


def build_state(
    nodes: Sequence[NodeSpec], groups: Sequence[Group], pods: Sequence[Pod], queues: Sequence[QueueSpec]
) -> ClusterSnapshot:
    jobs = []
    for i, g in enumerate(groups):
        namespace, name = g.name.split("/")
        tasks = tuple(p.spec(g.name) for p in pods if p.group == g.name)
        jobs.append(
            JobSpec(
                uid=g.name,
                name=name,
                namespace=namespace,
                queue=g.queue,
                priority=g.priority,
                min_available=g.min_member,
                task_min_available=dict(g.task_min or {}),
                creation=i if g.creation is None else g.creation,
                tasks=tasks,
                podgroup_phase=g.phase,
                min_resources=g.min_resources,
                preemption_policy=g.preemption_policy,
            )
        )
    return ClusterSnapshot(tuple(nodes), tuple(jobs), tuple(queues))


def conf(actions: str, *tiers: Sequence[Any]) -> str:
    """A volcano-scheduler.conf text; a plugin is a name or a mapping with name/flags/arguments."""
    import yaml

    doc = {
        "actions": actions,
        "tiers": [
            {"plugins": [p if isinstance(p, Mapping) else {"name": p} for p in tier]} for tier in tiers
        ],
    }
    return yaml.safe_dump(doc)


@dataclass
class Case:
    name: str
    nodes: Sequence[NodeSpec]
    groups: Sequence[Group]
    pods: Sequence[Pod]
    queues: Sequence[QueueSpec]
    conf: str
    binds: Mapping[str, str] | None = None
    evicted: Sequence[str] | None = None
    pipelined: Mapping[str, str] | None = None
    phases: Mapping[str, str] | None = None

    def state(self) -> ClusterSnapshot:
        return build_state(self.nodes, self.groups, self.pods, self.queues)

    def run(self) -> CycleResult:
        return run_cycle(self.state(), parse_conf(self.conf))

    def check(self) -> CycleResult:
        result = self.run()
        if self.binds is not None:
            assert dict(result.binds) == dict(self.binds), f"{self.name}: binds"
        if self.evicted is not None:
            assert sorted(result.evictions) == sorted(self.evicted), f"{self.name}: evictions"
        if self.pipelined is not None:
            assert dict(result.pipelined) == dict(self.pipelined), f"{self.name}: pipelined"
        if self.phases is not None:
            got = {k: result.podgroup_phases[k] for k in self.phases}
            assert got == dict(self.phases), f"{self.name}: phases"
        return result
