"""SubJobs (Volcano's ``SubJobInfo``): a job's pods grouped by its PodGroup ``subGroupPolicy``.

Each policy splits the pods it selects into subgroups by the values of its match label keys (a
task's partitions, by ``volcano.sh/partition-id``); pods no policy takes form the job's default
subgroup. A subgroup is ready when ``size`` of its pods are placed, which makes it the lower of the
two gang levels; the job needs ``min_groups`` ready subgroups of each policy besides its own gang.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from vglobal.model.partition import match_index, match_values, sub_job_gid, sub_job_id
from vglobal.scheduler.api import SubGroupSpec, TaskStatus

_READY = frozenset(
    {TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Bound, TaskStatus.Running, TaskStatus.Succeeded}
)


class SubTask(Protocol):
    """What a subgroup reads of its tasks (``TaskInfo``)."""

    @property
    def uid(self) -> str: ...
    @property
    def status(self) -> TaskStatus: ...
    @property
    def best_effort(self) -> bool: ...
    @property
    def priority(self) -> int: ...
    @property
    def row(self) -> int | None: ...


@dataclass(slots=True, eq=False)
class SubJobInfo:
    gid: str  # shared by the subgroups of one policy
    uid: str
    min_available: int  # the policy's subGroupSize (1 for the default subgroup)
    match_index: int = 0
    network_topology: tuple[str, int] | None = None
    tasks: dict[str, SubTask] = field(default_factory=dict)
    # the HyperNode holding what this subgroup placed so far (LCA), "" before any placement
    allocated_hyper_node: str = ""

    @property
    def priority(self) -> int:
        # Volcano's getTaskHighestPriority starts from 0: all-negative priorities give 0
        return max([0, *(t.priority for t in self.tasks.values())])

    def ready_num(self) -> int:
        return sum(1 for t in self.tasks.values() if t.status in _READY)

    def pending_best_effort(self) -> int:
        return sum(1 for t in self.tasks.values() if t.status == TaskStatus.Pending and t.best_effort)

    def waiting_num(self) -> int:
        return sum(1 for t in self.tasks.values() if t.status == TaskStatus.Pipelined)

    def is_ready(self) -> bool:
        return self.ready_num() + self.pending_best_effort() >= self.min_available

    def is_pipelined(self) -> bool:
        return self.waiting_num() + self.ready_num() + self.pending_best_effort() >= self.min_available

    def pending(self) -> list[SubTask]:
        return [t for t in self.tasks.values() if t.status == TaskStatus.Pending]


@dataclass(slots=True)
class SubJobs:
    """A job's subgroups, which subgroup each task is in, and each policy's minSubGroups."""

    by_uid: dict[str, SubJobInfo] = field(default_factory=dict)
    of_task: dict[str, SubJobInfo] = field(default_factory=dict)
    min_groups: dict[str, int] = field(default_factory=dict)  # policy gid -> minSubGroups

    def __bool__(self) -> bool:
        return bool(self.min_groups)

    def count(self, ready: bool, *, pipelined: bool = False) -> dict[str, int]:
        """Per policy gid: its subgroups (all, or only the ready / pipelined ones)."""
        out: dict[str, int] = {}
        for sub in self.by_uid.values():
            ok = not ready or (sub.is_pipelined() if pipelined else sub.is_ready())
            out[sub.gid] = out.get(sub.gid, 0) + ok
        return out

    def short_policies(self, *, pipelined: bool = False) -> list[tuple[str, int, int]]:
        """(policy gid, subgroups ready, minSubGroups) for each policy short of its minimum."""
        have = self.count(True, pipelined=pipelined)
        short = [(g, have.get(g, 0), m) for g, m in sorted(self.min_groups.items())]
        return [s for s in short if s[1] < s[2]]


def group_tasks(
    job_uid: str,
    policies: Sequence[SubGroupSpec],
    job_topology: tuple[str, int] | None,
    tasks: Iterable[tuple[SubTask, Mapping[str, str]]],
) -> SubJobs:
    """Put each (task, pod labels) in the subgroup of the first policy that takes it; the rest in the
    default subgroup, which has the job's topology (``JobInfo.getOrCreateSubJob``)."""
    out = SubJobs(min_groups={sub_job_gid(job_uid, p.name): p.min_groups for p in policies})
    if not policies:
        return out
    for task, labels in tasks:
        sub: SubJobInfo | None = None
        for policy in policies:
            values = match_values(policy.match_labels, policy.match_label_keys, labels)
            if values:
                uid = sub_job_id(job_uid, policy.name, values)
                sub = out.by_uid.get(uid)
                if sub is None:
                    sub = out.by_uid[uid] = SubJobInfo(
                        gid=sub_job_gid(job_uid, policy.name),
                        uid=uid,
                        min_available=policy.size,
                        match_index=match_index(values),
                        network_topology=policy.network_topology,
                    )
                break
        if sub is None:
            sub = out.by_uid.get(job_uid)
            if sub is None:
                sub = out.by_uid[job_uid] = SubJobInfo(
                    gid=job_uid, uid=job_uid, min_available=1, network_topology=job_topology
                )
        sub.tasks[task.uid] = task
        out.of_task[task.uid] = sub
    return out
