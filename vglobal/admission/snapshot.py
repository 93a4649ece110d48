"""What global admission reads (a Snapshot) and what it returns (an AdmissionResult).

Everything here is plain frozen data; the hub's dispatcher builds a Snapshot from Postgres each cycle.
All resource amounts are ResourceVectors in canonical integer units (see vglobal.model.resources).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from types import MappingProxyType

from vglobal.model.admission_policy import PLACEMENTS, AdmissionPolicy
from vglobal.model.cards import CardFree, CardUse
from vglobal.model.placement_prefs import NO_PREFS, PlacementPrefs
from vglobal.model.pod_anti_affinity import AntiTerm
from vglobal.model.queue_affinity import QueueAffinity
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import EMPTY, ResourceVector

ROOT = "root"

__all__ = ["PLACEMENTS", "ROOT", "AdmissionPolicy"]  # with the types below

_NO_LABELS: Mapping[str, str] = MappingProxyType({})
_NO_PLACEMENTS: Mapping[str, ResourceVector] = MappingProxyType({})
_NO_USAGE: Mapping[str, float] = MappingProxyType({})
_NO_CARDS: Mapping[str, tuple[CardFree, ...]] = MappingProxyType({})
_NO_LIMITS: Mapping[str, ResourceVector] = MappingProxyType({})
_NO_TASK_LABELS: Mapping[str, Mapping[str, str]] = MappingProxyType({})

# A job's uid, in C: passes over a large backlog take it per job.
uid_of = attrgetter("uid")


@dataclass(frozen=True)
class QueueSnap:
    """One queue of the tree. The root queue is implicit and never listed."""

    name: str
    parent: str | None = ROOT  # None is read as "root"
    weight: int = 1
    priority: int = 0
    # None = unlimited; dimensions it does not name inherit the parent's capability.
    capability: ResourceVector | None = None
    # Explicit spec.deserved (capacity-plugin style); None = computed by weighted water-filling.
    deserved: ResourceVector | None = None
    guarantee: ResourceVector = EMPTY
    reclaimable: bool = True
    open: bool = True
    # Usage of this queue's OWN admitted, unfinished jobs; admission rolls it up to the ancestors.
    allocated: ResourceVector = EMPTY
    # Of allocated, what its jobs' placed pods hold (the rest is reserved for gangs not all placed):
    # shown, not decided on.
    running: ResourceVector = EMPTY
    created: int = 0  # ordering key for ties (e.g. creation epoch seconds)
    # Decayed usage of the queue's OWN jobs in resource-seconds (admission/usage.py); read only
    # when the policy's fair_share_half_life is above 0. Rolled up to the ancestors like allocated.
    usage: Mapping[str, float] = field(default_factory=lambda: _NO_USAGE)
    # Its own fair-share half-life in seconds (vglobal.io/fair-share-half-life, inherited down the
    # tree); None = the policy's. Its usage is decayed with it, and read as its decayed allocation.
    half_life: float | None = None
    # What reclaim took from this queue within the dispatcher's rate-limit interval.
    reclaimed: ResourceVector = EMPTY
    # spec.affinity (node groups); None = unset, so the nearest ancestor's applies (nodegroups.py).
    affinity: QueueAffinity | None = None
    # Set when the queue spent its GPU-hour budget (the hub's spend ledger): why its jobs wait.
    over_budget: str = ""
    # Set when it spent 90 % of its GPU-hour budget: with the "worth" reclaim rule its running jobs
    # are the first victims.
    near_budget: bool = False
    # Its volcano.sh/nodegroup-resource-limits: per node group, what its pods may hold there
    # (group_limits.py); not inherited.
    node_group_limits: Mapping[str, ResourceVector] = field(default_factory=lambda: _NO_LIMITS)


Gang = tuple[tuple[ResourceVector, int], ...]


@dataclass(frozen=True)
class HyperNodeSnap:
    """A HyperNode of a cluster's network topology (what a hard or soft topology gang is placed in)."""

    name: str
    tier: int
    parent: str | None = None
    nodes: tuple[str, ...] = ()  # leaf node names directly or transitively below it


# On a node a pool can add but the cluster does not have yet: the pool's name. Admission places a
# gang on such nodes only where the real ones cannot hold it (they come after them in `node_order`).
PROVISIONABLE = "vglobal.io/provisionable"


@dataclass(frozen=True)
class NodeSnap:
    name: str
    free: ResourceVector
    allocatable: ResourceVector
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)


def node_order(n: NodeSnap) -> tuple[bool, str]:
    """The order a cluster's nodes are filled in: real nodes by name, then nodes a pool can add."""
    return PROVISIONABLE in n.labels, n.name


@dataclass(frozen=True)
class ClusterSnap:
    name: str
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)
    nodes: tuple[NodeSnap, ...] = ()
    schedulable: bool = True  # Ready and not cordoned
    hypernodes: tuple[HyperNodeSnap, ...] = ()
    # Gangs already dispatched here whose pods the agent has not placed yet: node free does not
    # show them, so admission takes their capacity (first-fit) before this cycle's placements.
    unplaced: tuple[Gang, ...] = ()
    # Per node name, its GPU cards as the agent reported them free (nodes with cards only): a gang
    # asking for vGPUs must fit the cards, not only the node totals (admission/devices.py).
    devices: Mapping[str, tuple[CardFree, ...]] = field(default_factory=lambda: _NO_CARDS)
    # Of the unplaced gangs, those asking for GPU cards, with their GPU annotations per gang entry:
    # the cards they will take are taken first, as their resources are (devices.py).
    unplaced_cards: tuple[tuple[Gang, tuple[Mapping[str, str], ...]], ...] = ()


@dataclass(frozen=True)
class GroupRef:
    """The HyperJob a child job belongs to (admission/hyperjob.py): its children are admitted
    together, at least ``min_available`` of its ``children`` at once."""

    key: str  # namespace/name of the HyperJob
    min_available: int
    children: int
    index: int  # this child's place among them


@dataclass(frozen=True)
class Partitions:
    """``count`` partitions of a gang, ``size`` pods of ``request`` each, every one whole inside one
    HyperNode of tier <= its topology's (within the job's HyperNode); their pods are in the gang too."""

    request: ResourceVector
    size: int
    count: int
    network_topology: tuple[str, int | None] | None = None  # (mode, highest tier allowed)


# Slots: the fields sit in the object itself, so a pass over a backlog of millions reads one
# block of memory per job, not two (measured: a budgeted first cycle at 1M pending 7.3 -> 4.7 s).
@dataclass(frozen=True, slots=True)
class PendingJob:
    uid: str
    name: str
    namespace: str
    queue: str
    priority: int  # resolved PriorityClass value
    created: float  # submit time, epoch seconds; kept when the job is re-queued
    waiting_since: float  # when it last became pending
    # What the queue checks charge: the gang's minResources (its minAvailable pods in task order,
    # as Volcano's job controller computes the PodGroup's); pods beyond it are elastic.
    request: ResourceVector
    gang: Gang  # (pod request, pod count) of the minAvailable pods that must fit on ONE cluster
    allowed_clusters: frozenset[str] | None = None  # vglobal.io/clusters; None = any
    cluster_selector: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)
    excluded_clusters: frozenset[str] = frozenset()  # back-off after a rejection or failover
    # vglobal.io/cluster-preference: of the clusters that hold it now, the first listed wins; the
    # unlisted come after, in the placement policy's order.
    preferred_clusters: tuple[str, ...] = ()
    # Its tolerations of cluster taints, datasets and data locality, how long it waits for a
    # preferred cluster, binpack/spread (the placement stages, fit/stages.py).
    prefs: PlacementPrefs = NO_PREFS
    network_topology: tuple[str, int | None] | None = None  # (mode, highest tier allowed)
    # Its PriorityClass's preemptionPolicy: "Never" waits for free capacity and preempts nothing.
    preemption_policy: str = "PreemptLowerPriority"
    group: GroupRef | None = None  # a HyperJob's child
    # The API resource it is written as in its cluster (model/served.py; "" for a Volcano Job):
    # a cluster whose agent says its API lacks it is no candidate.
    workload: str = ""
    partitions: tuple[Partitions, ...] = ()  # the gang's partitioned tasks (partitionPolicy)
    # Per gang entry, the GPU annotations of its pods (vgpu-mode, use-gputype, nouse-gputype) the
    # card fit reads; () when none has any.
    gpu_hints: tuple[Mapping[str, str], ...] = ()
    # Its pods' required pod anti-affinity terms (pod_anti.py): nodes where running pods they
    # select sit are closed to the gang until those pods are victims.
    anti_affinity: tuple[AntiTerm, ...] = ()
    # Its tasks and the labels their templates give their pods (tasks with labels only): running
    # pods' own anti-affinity is checked against them (with the controller's labels, pod_anti.py).
    tasks: tuple[str, ...] = ()
    task_labels: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _NO_TASK_LABELS)


@dataclass(frozen=True)
class RunningPod:
    """A placed pod of a running job: what evicting it frees, where."""

    uid: str  # as the agent names it: an eviction names this exact pod, never its replacement
    node: str
    request: ResourceVector
    preemptable: bool = True  # False: annotated volcano.sh/preemptable: "false", never a victim
    priority: int | None = None  # its task's own PriorityClass value; None = the job's
    cards: tuple[CardUse, ...] = ()  # the GPU cards it holds, as its agent granted them
    # Its labels (shared by the pods of a task), read only against pending jobs' anti-affinity.
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)


@dataclass(frozen=True, slots=True)
class RunningJob:
    uid: str
    queue: str
    cluster: str
    priority: int
    created: float
    request: ResourceVector
    # Per node of `cluster`: what this job's pods use there. Reclaim frees exactly this; a job
    # without placements can still be reclaimed for queue share but frees no known node capacity.
    placements: Mapping[str, ResourceVector] = field(default_factory=lambda: _NO_PLACEMENTS)
    running_since: float | None = None  # when this run was admitted (epoch seconds); None = unknown
    # Its placed pods (empty: not known pod by pod, so it can only be taken whole) and its gang
    # size: pods beyond min_available may be evicted one by one (Volcano's gang preemptable rule).
    pods: tuple[RunningPod, ...] = ()
    min_available: int = 0
    group: str | None = None  # the HyperJob (namespace/name) of a child
    # Its pods come in groups placed whole (a LeaderWorkerSet's): it goes whole, never pod by pod.
    whole_only: bool = False
    # No pod of it may go (all not preemptable; a long-running kind that does not say "true"): no
    # victim even while its pods are not known one by one.
    pinned: bool = False
    # Some task's pods are never victims (volcano.sh/preemptable "false"): only its other pods may
    # go, one by one; it is never taken whole, even while its pods are not known one by one.
    holds_pinned: bool = False
    # (node, card) of the GPU cards its pods hold when they are not listed in ``pods`` (the
    # simulator's runs): what taking the whole job gives back.
    cards: tuple[tuple[str, CardUse], ...] = ()
    namespace: str = ""  # where its pods run (a pod anti-affinity term selects by namespace)
    anti_affinity: tuple[AntiTerm, ...] = ()  # its pods' required pod anti-affinity terms
    name: str = ""  # its name in its namespace, for the reasons that name it
    # Its first preferred cluster and its placement preferences: whether this run is away from
    # where it prefers to run (fit/stages.py), which makes it a victim before its equals.
    preferred: tuple[str, ...] = ()
    prefs: PlacementPrefs = NO_PREFS
    away: bool = False  # set by admission (stages.away_running), not by its input
    # vglobal.io/checkpoint-interval in seconds (0 = none) and when it last reported a checkpoint
    # (None = never): what a stop loses is the run since the last one (victims/worth.py).
    checkpoint_interval: float = 0.0
    checkpointed: float | None = None


@dataclass(frozen=True)
class Claim:
    """Room freed by victims, claimed for the job they were taken for (``for_uid``) until its pods
    bind or ``expires`` (epoch seconds): nobody else is admitted into it meanwhile, the victims
    included, and the job takes no further victims while it stands (victims/claims.py)."""

    for_uid: str
    cluster: str
    nodes: tuple[str, ...]  # where the victims' pods ran
    victims: tuple[str, ...]  # job uids taken whole or in part
    expires: float


class PendingByQueue(tuple[PendingJob, ...]):
    """Pending jobs handed in grouped per queue: every queue's jobs in turn, and each queue's own
    tuple (``by_queue``). A caller that keeps a queue's tuple (the same object) while the queue's
    jobs stay the same lets a memo take over what it derived from them (memo.py), and spares the
    cycle a pass over the whole backlog. Plain tuples work the same, only slower."""

    by_queue: Mapping[str, tuple[PendingJob, ...]]

    def __new__(cls, by_queue: Mapping[str, tuple[PendingJob, ...]]) -> PendingByQueue:
        self = super().__new__(cls, chain.from_iterable(by_queue.values()))
        self.by_queue = by_queue
        return self


@dataclass(frozen=True)
class Snapshot:
    now: float
    queues: tuple[QueueSnap, ...]
    clusters: tuple[ClusterSnap, ...]
    pending: tuple[PendingJob, ...]
    running: tuple[RunningJob, ...] = ()
    policy: AdmissionPolicy = field(default_factory=AdmissionPolicy)
    claims: tuple[Claim, ...] = ()  # those the previous cycle returned (AdmissionResult.claims)

    # running jobs by uid, made on the first running_name() (only a cycle with victims asks)
    _running: dict[str, RunningJob] = field(default_factory=dict, init=False, repr=False, compare=False)

    def running_name(self, uid: str) -> str:
        """A running job (a victim) as reasons name it (job_ref); its uid if it is not running."""
        job = self.running_job(uid)
        return uid if job is None else job_ref(job)

    def running_job(self, uid: str) -> RunningJob | None:
        by_uid = self._running
        if not by_uid and self.running:
            by_uid.update(zip(map(uid_of, self.running), self.running, strict=True))
        return by_uid.get(uid)


def job_ref(job: PendingJob | RunningJob) -> str:
    """A job as reasons and events name it, as every command takes it: namespace/name (its uid if
    it has no name)."""
    return f"{job.namespace}/{job.name}" if job.name else job.uid


@dataclass(frozen=True)
class Admit:
    cluster: str
    # Set when it goes there in place of lower-priority pods of its queue (Volcano's preempt):
    # which, so the admission's event can say so.
    preempting: str = ""
    # Set when it goes there in place of surplus pods of queues above their deserved (reclaim).
    reclaiming: str = ""
    # With preempting or reclaiming: the nodes its gang was packed onto in the room the victims
    # free, which its agent tries first (Volcano's nominatedNodeName).
    nominated: tuple[str, ...] = ()
    # Where its gang needs nodes the cluster's pools can add: (pool, nodes), so its event says so.
    grows: tuple[tuple[str, int], ...] = ()
    # Set when the cluster is not where the job prefers to run (fit/stages.py): why, for its event.
    away: str = ""
    # Where the placement stages had something to weigh: the chosen cluster's verdict at admission
    # (fit/stages.py, "cloud: score 0.17, tried 2nd (...)"), so describe says why it landed there.
    placed: str = ""

    @property
    def grows_text(self) -> str:
        """What the admission counts on that the cluster does not have yet ("" if nothing)."""
        pools = ", ".join(f"{n} node{'s' if n != 1 else ''} of node pool {p}" for p, n in self.grows)
        return f"its gang needs {pools} that cluster {self.cluster} can add" if pools else ""


@dataclass(frozen=True)
class Wait:
    kind: WaitKind
    reason: str  # a sentence a person understands, with numbers


@dataclass(frozen=True)
class QueueStatus:
    name: str
    allocated: ResourceVector
    deserved: ResourceVector
    real_capability: ResourceVector | None  # None = unlimited
    guarantee: ResourceVector
    pending: int
    running: int
    # Admitted in this cycle (already included in `allocated`).
    admitted: int = 0
    # Volcano's queue request: `allocated` before this cycle plus what its waiting jobs ask for.
    request: ResourceVector = EMPTY
    # Decayed usage (resource-seconds, rolled up) and its dominant share of deserved; empty and 0
    # with no half-life.
    usage: Mapping[str, float] = field(default_factory=lambda: _NO_USAGE)
    usage_share: float = 0.0


@dataclass(frozen=True)
class Reclaim:
    victim_uid: str
    cluster: str
    for_uid: str
    reason: str
    preempted: bool = False  # taken by a higher-priority job of its own queue, not by reclaim


@dataclass(frozen=True)
class Eviction:
    """Pods of a running job to evict (the job keeps running with the rest; its PodEvicted
    policies apply), so that job `for_uid` fits in their place."""

    job_uid: str
    cluster: str
    pods: tuple[str, ...]  # RunningPod.uid
    for_uid: str
    reason: str
    reclaimed: bool = False  # taken by a queue below its deserved, not by preemption in its queue


@dataclass(frozen=True)
class AdmissionResult:
    decisions: Mapping[str, Admit | Wait]  # one per pending job uid
    reclaims: tuple[Reclaim, ...]  # running jobs to stop and re-queue
    queues: Mapping[str, QueueStatus]  # every queue, non-leaf ones and "root" included
    admitted_order: tuple[str, ...]  # uids in the order admitted
    evictions: tuple[Eviction, ...] = ()  # single pods taken by preemption or reclaim
    claims: tuple[Claim, ...] = ()  # standing after this cycle: the next one's input
