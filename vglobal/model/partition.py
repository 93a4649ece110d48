"""A task's ``partitionPolicy`` and the PodGroup ``subGroupPolicy`` Volcano's job controller makes of it.

A partition is ``partitionSize`` pods of one task placed together or not at all (a SubGroup); at least
``minPartitions`` of them must be placed for the job to start. Pod ``i`` of the task is in partition
``i // partitionSize`` and carries it in the ``volcano.sh/partition-id`` label; the scheduler groups
pods into subgroups by the labels a SubGroupPolicy names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vglobal.model.errors import Problems
from vglobal.model.k8s import Int32, Model
from vglobal.model.network_topology import NetworkTopology, NetworkTopologySpec, build_network_topology

PARTITION_ID_LABEL = "volcano.sh/partition-id"
TASK_SPEC_LABEL = "volcano.sh/task-spec"
# The group of a LeaderWorkerSet pod (the label the LWS controller puts on its pods).
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
GROUP_POLICY = "lws-group"
# Match values longer than this are replaced by a short hash in a subgroup's id.
MAX_MATCH_ID = 128
_SAFE_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True, kw_only=True)
class PartitionPolicy:
    total_partitions: int
    partition_size: int
    min_partitions: int = 0
    network_topology: NetworkTopology | None = None


class PartitionPolicySpec(Model):
    total_partitions: Int32 = 0
    partition_size: Int32 = 0
    min_partitions: Int32 = 0
    network_topology: NetworkTopologySpec | None = None


@dataclass(frozen=True, kw_only=True)
class SubGroupPolicy:
    """One PodGroup ``spec.subGroupPolicy`` entry: pods matching ``match_labels`` with equal values of
    every ``match_label_keys`` label form one subgroup of ``sub_group_size`` pods."""

    name: str
    sub_group_size: int = 1
    min_sub_groups: int = 0
    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_label_keys: tuple[str, ...] = ()
    network_topology: NetworkTopology | None = None


def build_partition_policy(
    p: Problems, base: str, spec: PartitionPolicySpec | None, replicas: int, min_available: int | None
) -> PartitionPolicy | None:
    """The policy at ``base`` (``spec.tasks[i]``) checked as Volcano's webhook and CRD check it."""
    if spec is None:
        return None
    where = f"{base}.partitionPolicy"
    total, size, minimum = spec.total_partitions, spec.partition_size, spec.min_partitions
    if total < 1:
        p.add(f"{where}.totalPartitions", "must be >= 1")
    if size < 1:
        p.add(f"{where}.partitionSize", "must be >= 1")
    if minimum < 0:
        p.add(f"{where}.minPartitions", "must be >= 0")
    elif total >= 1 and minimum > total:
        p.add(f"{where}.minPartitions", f"minPartitions {minimum} is more than the {total} totalPartitions")
    if total >= 1 and size >= 1:
        if replicas != total * size:
            p.add(
                f"{base}.replicas",
                f"replicas {replicas} must equal totalPartitions x partitionSize "
                f"({total} x {size} = {total * size})",
            )
        elif min_available is not None and minimum > 0 and min_available != minimum * size:
            p.add(
                f"{base}.minAvailable",
                f"minAvailable {min_available} must equal minPartitions x partitionSize "
                f"({minimum} x {size} = {minimum * size})",
            )
    topology = build_network_topology(p, f"{where}.networkTopology", spec.network_topology)
    return PartitionPolicy(
        total_partitions=max(total, 0),
        partition_size=max(size, 0),
        min_partitions=max(minimum, 0),
        network_topology=topology,
    )


def default_min_available(replicas: int, policy: PartitionPolicy | None) -> int:
    """A task's minAvailable when unset: minPartitions x partitionSize when minPartitions is set,
    else every replica (a policy without minPartitions keeps the task's gang whole)."""
    if policy is not None and policy.min_partitions > 0:
        return policy.min_partitions * policy.partition_size
    return replicas


def partition_id(index: int, policy: PartitionPolicy) -> int:
    """The partition of the task's pod ``index`` (0 when the size is not positive)."""
    return index // policy.partition_size if policy.partition_size > 0 else 0


def sub_group_policy(task_name: str, policy: PartitionPolicy) -> SubGroupPolicy:
    return SubGroupPolicy(
        name=task_name,
        sub_group_size=policy.partition_size,
        min_sub_groups=policy.min_partitions,
        match_labels={TASK_SPEC_LABEL: task_name},
        match_label_keys=(PARTITION_ID_LABEL,),
        network_topology=policy.network_topology,
    )


def group_policy(size: int) -> SubGroupPolicy:
    """A job's groups (an LWS's): each its ``size`` pods of every task, by their group index label,
    placed whole; one is enough to start (Volcano gives each LWS group a PodGroup of its own)."""
    return SubGroupPolicy(
        name=GROUP_POLICY, sub_group_size=size, min_sub_groups=1, match_label_keys=(GROUP_INDEX_LABEL,)
    )


def group_index(index: int, group_pods: int) -> int:
    """The group of a task's pod ``index`` when each group holds ``group_pods`` of the task's pods."""
    return index // group_pods if group_pods > 0 else 0


# --- grouping pods into subgroups (the scheduler's view of a SubGroupPolicy) ---


def match_values(
    match_labels: Mapping[str, str], match_label_keys: Sequence[str], labels: Mapping[str, str]
) -> tuple[str, ...] | None:
    """A pod's values of a policy's match keys; None if the pod is not under the policy (its labels
    miss the selector, or a match key is absent or empty). No keys: () (the job's default group)."""
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return None
    values = []
    for key in match_label_keys:
        value = labels.get(key, "")
        if not value:
            return None
        values.append(value)
    return tuple(values)


def _fnv32a(text: str) -> int:
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def _safe_encode(text: str) -> str:
    return "".join(_SAFE_ALPHANUMS[ord(c) % len(_SAFE_ALPHANUMS)] for c in text)


def sub_job_gid(job: str, policy: str) -> str:
    """The id every subgroup of one policy shares."""
    return f"{job}/{policy}"


def sub_job_id(job: str, policy: str, values: Sequence[str]) -> str:
    """One subgroup's id: the policy and its match values joined by "-" (hashed when too long)."""
    key = "-".join(values)
    if len(key) > MAX_MATCH_ID:
        key = _safe_encode(str(_fnv32a(key)))
    return f"{job}/{policy}-{key}"


def match_index(values: Sequence[str]) -> int:
    """The subgroup's order among its policy's subgroups: its first match value as a number, else 0."""
    if values:
        text = values[0]
        if text.lstrip("+-").isdigit():
            return int(text)
    return 0
