"""One dispatched run of a job on this cluster: its pods, phase, retries and unsent events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vglobal.agent.pods import PodManifest, PodPhase, PodStatus
from vglobal.agent.policies import Request
from vglobal.model.forms import PodPlacement, TaskCounts
from vglobal.model.job import Job
from vglobal.model.phases import JobPhase, is_finished
from vglobal.scheduler.api import Grant, QueueSpec


@dataclass(frozen=True, slots=True)
class RunEvent:
    kind: str  # Normal | Warning
    reason: str  # PodFailed, RestartTask, JobRunning, Unschedulable ...
    message: str
    time: float


@dataclass(frozen=True, slots=True)
class Delayed:
    """A policy action waiting for its ``timeout``; dropped if the job restarted meanwhile."""

    due: float
    version: int
    request: Request
    action: str


@dataclass(frozen=True, slots=True)
class AdoptedRun:
    """A run found in the cluster when the agent starts: the job and the pods it already has."""

    uid: str
    generation: int
    job: Job
    queue: str
    priority: int
    version: int
    incarnations: int
    pods: tuple[tuple[PodManifest, PodStatus], ...]
    # per pod on a node that holds GPUs: (its uid, the node, the GPUs), as the cluster recorded them
    grants: tuple[tuple[str, str, tuple[Grant, ...]], ...] = ()


@dataclass(slots=True)
class JobRun:
    uid: str
    generation: int
    job: Job
    queue: str
    priority: int
    seq: int  # acceptance order: the scheduler's creation key
    accepted_at: float
    phase: JobPhase = JobPhase.Pending
    retry_count: int = 0
    version: int = 0  # bumped by every restart; requests of an older version only sync
    pods: dict[str, PodManifest] = field(default_factory=dict)  # by pod name, current incarnation
    status: dict[str, PodStatus] = field(default_factory=dict)  # by pod name, last observed
    podgroup_phase: str = "Pending"
    message: str = ""
    started: bool = False  # reached Running once (the bind timeout no longer applies)
    finished_at: float | None = None
    delayed: list[Delayed] = field(default_factory=list)
    incarnations: int = 0
    objects: list[dict[str, Any]] = field(default_factory=list)  # services / config maps of plugins
    pipelined: dict[str, str] = field(default_factory=dict)  # pod uid -> node, from the last cycle
    # Pods the hub evicted to make room for another job: their replacements wait while another run
    # here has less than its gang placed (agent/snapshot.py), so they do not take the room back.
    held: set[str] = field(default_factory=set)  # pod names
    failed_tasks: set[tuple[str, int]] = field(default_factory=set)  # (task, version) already TaskFailed
    events: list[RunEvent] = field(default_factory=list)  # not yet reported
    preemption_policy: str = "PreemptLowerPriority"  # its PriorityClass's, from the hub
    task_priorities: dict[str, int] = field(default_factory=dict)  # tasks with their own class
    # Its queue and the queue's ancestors as the hub sent them (weight, parent, node-group affinity).
    queues: tuple[QueueSpec, ...] = ()
    # Nodes the hub made room on for this run (preemption, reclaim): its pending pods try them first.
    nominated: tuple[str, ...] = ()
    history: list[RunEvent] = field(default_factory=list)  # everything, for sim output and tests
    spec_generation: int = 0  # the job's metadata.generation this run carries out (0: not said)
    checkpointed: float | None = None  # the latest checkpoint its pods declared (epoch seconds)
    dirty: bool = True  # status changed since the last report

    @property
    def finished(self) -> bool:
        return is_finished(self.phase)

    def event(self, kind: str, reason: str, message: str, now: float) -> None:
        ev = RunEvent(kind, reason, message, now)
        self.events.append(ev)
        self.history.append(ev)
        self.dirty = True

    def take_events(self) -> list[RunEvent]:
        out, self.events = self.events, []
        return out

    def phase_of(self, name: str) -> PodPhase:
        return self.status[name].phase

    def count(self, *phases: PodPhase, task: str | None = None) -> int:
        return sum(
            1
            for name, pod in self.pods.items()
            if (task is None or pod.task == task) and self.status[name].phase in phases
        )

    def task_counts(self) -> list[TaskCounts]:
        out = []
        for t in self.job.tasks:
            out.append(
                TaskCounts(
                    name=t.name,
                    replicas=t.replicas,
                    pending=self.count(PodPhase.Pending, task=t.name),
                    running=self.count(PodPhase.Running, task=t.name),
                    succeeded=self.count(PodPhase.Succeeded, task=t.name),
                    failed=self.count(PodPhase.Failed, task=t.name),
                )
            )
        return out

    def pod_failure(self) -> str:
        """Why its pods failed, as the cluster says, for a Failed run's reason: the first failed
        pod's cause ("pod x OOMKilled, exit 137, restart 3"), else its exit code, else the first
        cause of a pod that does not run ("pod y ImagePullBackOff: ..."); "" when none is known."""
        failed, other = "", ""
        for name in sorted(self.pods):
            st = self.status[name]
            pod = st.name or name
            if st.phase == PodPhase.Failed:
                if st.cause:
                    return f"pod {pod} {st.cause}"
                if not failed:
                    why = f" ({st.reason})" if st.reason else ""
                    failed = f"pod {pod} failed with exit code {st.exit_code}{why}"
            elif st.cause and not other:
                other = f"pod {pod} {st.cause}"
        return failed or other

    def placements(self) -> list[PodPlacement]:
        """Every pod with its task, node and phase, in task then index order."""
        order = {t.name: i for i, t in enumerate(self.job.tasks)}
        pods = sorted(self.pods.values(), key=lambda p: (order.get(p.task, 0), p.index))
        out = []
        for p in pods:
            st = self.status[p.name]
            real = st.name if st.name and st.name != p.name else ""
            node, phase = st.node or "", str(st.phase)
            more = (real, st.ip, st.restarts, st.cause)
            out.append(PodPlacement(p.name, p.task, node, phase, p.uid, (), *more))
        return out
