"""Every sentence a Wait or a Reclaim carries: which limit stopped a job, with its figures in
Kubernetes quantities (DESIGN 5.3 step 7). The steps decide; this module only words it."""

from __future__ import annotations

from collections.abc import Sequence

from vglobal.admission.fit.index import ResourceIndex
from vglobal.admission.share.tree import QueueTree
from vglobal.admission.snapshot import Partitions, Wait
from vglobal.model.dra import RESOURCE_PREFIX
from vglobal.model.quantity import format_units
from vglobal.model.reasons import WaitKind
from vglobal.model.served import MISSING, served_label


def fmt_row(index: ResourceIndex, row: Sequence[int | float]) -> str:
    """``{cpu: 4, nvidia.com/gpu: 8}`` from a dense row (zero dimensions left out)."""
    parts = [
        f"{name}: {format_units(name, int(value))}"
        for name, value in zip(index.names, row, strict=True)
        if value
    ]
    return "{" + ", ".join(parts) + "}"


def fmt_amount(index: ResourceIndex, dim: int, value: int | float) -> str:
    return format_units(index.names[dim], int(value))


def fmt_gang(index: ResourceIndex, shapes: Sequence[tuple[Sequence[int], int]]) -> str:
    """``8 pods x {nvidia.com/gpu: 8}`` (shapes joined with ``+``)."""
    if not shapes:
        return "no pods"
    return " + ".join(f"{n} pod{'s' if n != 1 else ''} x {fmt_row(index, row)}" for row, n in shapes)


def capability_reason(
    queue: str, index: ResourceIndex, dim: int, cap: float, alloc: int, need: int, explicit: bool
) -> str:
    name = index.names[dim]
    amount = fmt_amount(index, dim, cap)
    # A limit the admin did not set comes from capacity less the guarantees of sibling queues.
    limit = (
        f"capability {name} {amount}"
        if explicit
        else (f"limit {name} {amount} (schedulable capacity less other queues' guarantees)")
    )
    return (
        f"queue {queue}: {limit}, allocated {fmt_amount(index, dim, alloc)}, "
        f"job needs {fmt_amount(index, dim, need)}"
    )


def guarantee_reason(index: ResourceIndex, dim: int, free: int, held: int, need: int) -> str:
    name = index.names[dim]
    return (
        f"guarantees of other queues hold back {name} {fmt_amount(index, dim, held)} of "
        f"{fmt_amount(index, dim, free)} free, job needs {fmt_amount(index, dim, need)}"
    )


def capacity_reason(index: ResourceIndex, dim: int, capacity: float, need: int) -> str:
    name = index.names[dim]
    if not capacity and name.startswith(RESOURCE_PREFIX):
        # No agent reported a device of the class: the job waits here instead of nowhere.
        device_class, _, capacity_name = name.removeprefix(RESOURCE_PREFIX).partition("/")
        if capacity_name:
            return (
                f"job needs {name} {fmt_amount(index, dim, need)} but no schedulable cluster reports a "
                f"shared DRA device of class {device_class} with capacity {capacity_name} (no "
                "ResourceSlice offers one with allowMultipleAllocations)"
            )
        return (
            f"job needs {name} {fmt_amount(index, dim, need)} but no schedulable cluster reports a "
            f"DRA device of class {name.removeprefix(RESOURCE_PREFIX)} (no ResourceSlice offers one)"
        )
    return (
        f"job needs {index.names[dim]} {fmt_amount(index, dim, need)} but all schedulable clusters "
        f"together have {fmt_amount(index, dim, capacity)}"
    )


def lacks_reason(clusters: Sequence[str], resource: str) -> str:
    """Clusters passed over because their agent said their API does not serve the job's kind."""
    names = ", ".join(clusters)
    verb = "does" if len(clusters) == 1 else "do"
    return (
        f"{names} {verb} not serve {resource} (cluster label {served_label(resource)}={MISSING}:"
        " its CRD and controller are not installed there)"
    )


def tier_text(highest_tier: int | None) -> str:
    return "any tier" if highest_tier is None else f"tier <= {highest_tier}"


def queue_wait(tree: QueueTree, queue: str) -> Wait:
    """Why a queue takes no jobs now: it does not exist, is not a leaf, or it or an ancestor is closed."""
    i = tree.idx.get(queue)
    if i is None:
        return Wait(WaitKind.QueueMissing, f"queue {queue} does not exist")
    if not tree.is_leaf[i]:
        kids = ", ".join(tree.names[c] for c in tree.children[i])
        return Wait(
            WaitKind.QueueNotLeaf,
            f"queue {queue} is not a leaf queue (children: {kids}); jobs go only to leaf queues",
        )
    closed = next(q for q in tree.path[i] if not tree.snaps[q].open)
    return Wait(WaitKind.QueueClosed, f"queue {tree.names[closed]} is closed")


def lookback_wait(queue: str, lookback: int, pending: int) -> Wait:
    return Wait(
        WaitKind.QueueLookback,
        f"waiting its turn in queue {queue}: a cycle looks at {lookback} of its "
        f"{pending} pending jobs past those it admits (--queue-lookback)",
    )


def budget_wait(budget: int) -> Wait:
    return Wait(
        WaitKind.CycleBudget,
        f"waiting its turn: this cycle admitted {budget} jobs, the most one cycle admits "
        "(--max-admissions-per-cycle); the rest are looked at next cycle",
    )


def no_fit_reason(gang: str, best: str) -> str:
    """`gang` as fmt_gang gives it; `best` says which candidate came closest (or why none did)."""
    return f"no cluster fits gang: {gang}; {best}"


def no_hypernode_reason(highest_tier: int | None, best: str) -> str:
    return f"no HyperNode of {tier_text(highest_tier)} holds it in any candidate cluster ({best})"


def no_partition_fit_reason(
    partitions: Sequence[Partitions], job_topology: tuple[str, int | None] | None, best: str
) -> str:
    """Why a gang with partitions fits no candidate: each partition must sit whole in one HyperNode."""
    parts = []
    for p in partitions:
        topo = p.network_topology
        where = "" if topo is None else f" in one HyperNode of {tier_text(topo[1])} ({topo[0]})"
        parts.append(f"{p.count} partitions of {p.size} pods{where}")
    inside = ""
    if job_topology is not None:
        inside = f", all within one HyperNode of {tier_text(job_topology[1])} ({job_topology[0]})"
    return f"no candidate cluster holds {' and '.join(parts)}{inside} ({best})"


def behind_reason(gang: str, best: str, starving: str, queue: str) -> str:
    return (
        f"{no_fit_reason(gang, best)}; starving, but queued behind the starving job {starving} "
        f"of queue {queue}"
    )


def reserved_reason(cluster: str, gang: str, starving: str, queue: str) -> str:
    return (
        f"capacity on {cluster} that fits gang {gang} is reserved for the starving job {starving} "
        f"of queue {queue}"
    )


def starving_reason(head: str, waited: int, after: float, held: str, cluster: str, queue: str) -> str:
    """`head` is the job's no_fit_reason; `held` the capacity reserved for it (fmt_row)."""
    return (
        f"{head}; waiting {waited}s (over {int(after)}s): capacity {held} reserved on {cluster} "
        f"against lower-priority jobs of queue {queue}"
    )


def never_fits_reason(head: str) -> str:
    return f"{head}; no candidate cluster could hold it even when empty"


def never_fit_pod_reason(short: str, gang: str) -> str:
    """`short` says which pod no node could ever hold ("needs 16 nvidia.com/gpu per pod, the
    largest node has 8"): waiting changes nothing until nodes change."""
    return f"can never fit today: {short}; gang: {gang}"


def victim_reason(victim_queue: str, uid: str, queue: str) -> str:
    return (
        f"queue {victim_queue} is above its deserved share; reclaimed for job {uid} of queue {queue}, "
        "which is below its deserved share"
    )


def reclaiming_reason(queue: str, cluster: str, victims: Sequence[str], gang: str) -> str:
    n = len(victims)
    return (
        f"queue {queue} is below its deserved share: reclaiming {n} job{'s' if n != 1 else ''} on "
        f"{cluster} ({', '.join(victims)}); gang {gang} is admitted once they stop"
    )


def preempting_reason(queue: str, cluster: str, victims: Sequence[str]) -> str:
    return (
        f"admitted to {cluster} in place of lower-priority work of queue {queue}: evicting "
        f"{', '.join(victims)}; its pods start there once they are gone"
    )


def reclaiming_pods_reason(queue: str, cluster: str, victims: Sequence[str]) -> str:
    return (
        f"queue {queue} is below its deserved share: admitted to {cluster} in place of surplus pods "
        f"of queues above theirs, evicting {', '.join(victims)}; its pods start there once they are gone"
    )
