"""Nodes and pods as the agent keeps them: small records made from the API's JSON on the
informer threads (the raw objects are dropped, so 20,000 pods stay cheap to hold)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from vglobal.agent.deadlines import DEADLINE_ANNOTATION
from vglobal.agent.kube import vgpu
from vglobal.agent.pods import PodPhase, PodStatus
from vglobal.model.errors import Problems
from vglobal.model.k8s import pod_request
from vglobal.model.resources import ResourceVector
from vglobal.scheduler.api import NodeSpec, Taint
from vglobal.scheduler.devices import GPUS_EXTENSION, GpuDevice, gpus_from_spec

# The pod's workload sets it when it has saved its work: a reclaim then loses only the run since.
CHECKPOINTED_ANNOTATION = "vglobal.io/checkpointed-at"
POD_UID_ANNOTATION = "vglobal.io/pod-uid"  # the agent's id of this incarnation of the pod
JOB_UID_LABEL = "vglobal.io/job-uid"
GENERATION_LABEL = "vglobal.io/generation"
JOB_VERSION_ANNOTATION = "volcano.sh/job-version"
TASK_LABEL, TASK_INDEX_LABEL = "volcano.sh/task-spec", "volcano.sh/task-index"
ROLE_LABEL = "vglobal.io/role"  # which pod template of a workload object a pod was made from
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
GFD_PRODUCT, GFD_MEMORY, GFD_COUNT = "nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.count"
MIG_CAPABLE_LABEL = "nvidia.com/mig.capable"
NVIDIA_GPU = "nvidia.com/gpu"
_PHASES = {p.value: p for p in PodPhase}


@dataclass(frozen=True, slots=True)
class PodRecord:
    namespace: str
    name: str
    uid: str  # Kubernetes' uid
    ours: str  # the agent's pod id (annotation), "" for pods the agent did not create
    job_uid: str
    generation: int
    node: str | None
    phase: PodPhase
    request: ResourceVector  # without the pod slot
    exit_code: int | None = None
    reason: str = ""  # Evicted, OOMKilled, Error, ...
    message: str = ""
    deleting: bool = False
    version: int = 0  # volcano.sh/job-version: the run version that created it
    owner: str = ""  # name of the per-job object that owns it
    task: str = ""  # volcano.sh/task-spec
    index: int = 0  # volcano.sh/task-index
    role: str = ""  # the workload pod template it was made from (an LWS group's first pod: leader)
    group: int = -1  # its LeaderWorkerSet group, -1 outside one
    deadline: str = ""  # the policy deadline it carries (agent/deadlines.py), "" for none
    devices: str = ""  # volcano.sh/vgpu-ids-new: the vGPUs it was bound with (vgpu.grants_of)
    cause: str = ""  # why a container waits or last died (pod_cause)
    restarts: int = 0  # its containers' restarts
    ip: str = ""  # status.podIP
    checkpointed: float | None = None  # vglobal.io/checkpointed-at, epoch seconds

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def finished(self) -> bool:
        return self.phase in (PodPhase.Succeeded, PodPhase.Failed)

    @property
    def holds_node(self) -> bool:
        """It counts against its node's capacity: placed and not finished."""
        return self.node is not None and not self.finished


@functools.lru_cache(maxsize=4096)
def _request(key: bytes) -> ResourceVector:
    containers, init, overhead = orjson.loads(key)
    p = Problems()
    spec = {"containers": containers or [{}], "initContainers": init, "overhead": overhead}
    out = pod_request(p, "spec", spec)
    return out if not p else ResourceVector()


def request_of(spec: Mapping[str, Any]) -> ResourceVector:
    """What the pod holds on its node (Kubernetes' rule); a pod with bad quantities holds nothing."""
    containers = [{"resources": c.get("resources") or {}} for c in spec.get("containers") or []]
    init = [
        {"resources": c.get("resources") or {}, "restartPolicy": c.get("restartPolicy")}
        for c in spec.get("initContainers") or []
    ]
    return _request(orjson.dumps([containers, init, spec.get("overhead")], option=orjson.OPT_SORT_KEYS))


def _termination(status: Mapping[str, Any]) -> tuple[int | None, str]:
    """The first container's exit code and reason, as Volcano reads them (one container per task)."""
    for cs in status.get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if term:
            return int(term.get("exitCode", 0)), str(term.get("reason") or "")
        return None, ""
    return None, ""


# Waiting reasons that are a pod starting normally, not a cause to report.
STARTING = frozenset({"", "ContainerCreating", "PodInitializing"})


def pod_cause(status: Mapping[str, Any]) -> tuple[str, int]:
    """(why a container does not run as it should, the containers' restarts) as the cluster says
    it: a waiting reason with its message (ImagePullBackOff, CrashLoopBackOff, ...), else the last
    abnormal termination with its exit code and restart count (OOMKilled, Error)."""
    statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    for cs in statuses:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        if reason not in STARTING:
            message = str(waiting.get("message") or "")
            return (f"{reason}: {message}" if message else reason), restarts
    for cs in statuses:
        state, last = cs.get("state") or {}, cs.get("lastState") or {}
        term = state.get("terminated") or last.get("terminated") or {}
        code = int(term.get("exitCode") or 0)
        if term and (code != 0 or term.get("reason") == "OOMKilled"):
            n = int(cs.get("restartCount") or 0)
            return f"{term.get('reason') or 'Error'}, exit {code}" + (f", restart {n}" if n else ""), restarts
    return "", restarts


def pod_record(obj: Mapping[str, Any]) -> PodRecord:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    phase = _PHASES.get(str(status.get("phase") or "Pending"), PodPhase.Pending)
    exit_code, term_reason = _termination(status) if phase == PodPhase.Failed else (None, "")
    if phase == PodPhase.Succeeded:
        exit_code = 0
    cause, restarts = pod_cause(status)
    owner = next(
        (o.get("name", "") for o in meta.get("ownerReferences") or [] if o.get("kind") == "ConfigMap"), ""
    )
    return PodRecord(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        ours=str(annotations.get(POD_UID_ANNOTATION, "")),
        job_uid=str(labels.get(JOB_UID_LABEL, "")),
        generation=_int(labels.get(GENERATION_LABEL)),
        node=spec.get("nodeName") or None,
        phase=phase,
        request=request_of(spec),
        exit_code=exit_code,
        reason=str(status.get("reason") or term_reason or ""),
        message=str(status.get("message") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        version=_int(annotations.get(JOB_VERSION_ANNOTATION)),
        owner=str(owner),
        task=str(labels.get(TASK_LABEL, "")),
        index=_int(labels.get(TASK_INDEX_LABEL)),
        role="leader" if labels.get(LWS_WORKER_INDEX) == "0" else str(labels.get(ROLE_LABEL, "")),
        group=_int(labels.get(LWS_GROUP_INDEX)) if LWS_GROUP_INDEX in labels else -1,
        deadline=str(annotations.get(DEADLINE_ANNOTATION, "")),
        devices=str(annotations.get(vgpu.IDS_ANNOTATION, "")),
        cause=cause,
        restarts=restarts,
        ip=str(status.get("podIP") or ""),
        checkpointed=rfc3339(annotations.get(CHECKPOINTED_ANNOTATION)),
    )


def rfc3339(raw: Any) -> float | None:
    """An RFC 3339 time (a workload's own annotation) as epoch seconds; None when absent or not
    one (the workload wrote it: a bad value is not the agent's to refuse)."""
    if not raw or not isinstance(raw, str):
        return None
    try:
        at = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def _int(raw: Any) -> int:
    try:
        return int(raw or 0)
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True, slots=True)
class NodeRecord:
    spec: NodeSpec  # unschedulable when cordoned or not Ready
    ready: bool
    cordoned: bool
    uuids: tuple[str, ...] = ()  # GPU UUIDs by device index (vGPU registration)

    @property
    def name(self) -> str:
        return self.spec.name


def _allocatable(status: Mapping[str, Any]) -> ResourceVector:
    try:
        return ResourceVector.from_quantities(status.get("allocatable") or {})
    except ValueError:
        return ResourceVector()


def _ready(status: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def _gfd_devices(labels: Mapping[str, str], allocatable: ResourceVector) -> tuple[GpuDevice, ...]:
    """Whole GPUs described by the GPU Feature Discovery labels (count, memory in MiB, model)."""
    if GFD_PRODUCT not in labels and GFD_MEMORY not in labels:
        return ()
    try:
        count = int(labels.get(GFD_COUNT) or allocatable[NVIDIA_GPU] // 1000)
        memory = int(labels.get(GFD_MEMORY) or 0)
    except ValueError:
        return ()
    mig = labels.get(MIG_CAPABLE_LABEL, "").lower() == "true"
    return gpus_from_spec(count, memory, labels.get(GFD_PRODUCT, ""), mig) if count > 0 else ()


def node_record(obj: Mapping[str, Any]) -> NodeRecord:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    allocatable = _allocatable(status)
    devices, uuids = vgpu.registered_devices(meta.get("annotations") or {}, allocatable)
    if not devices:
        devices = _gfd_devices(labels, allocatable)
    ready = _ready(status)
    cordoned = bool(spec.get("unschedulable"))
    taints = tuple(
        Taint(
            key=str(t.get("key", "")),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or "NoSchedule"),
        )
        for t in spec.get("taints") or []
    )
    node = NodeSpec(
        name=str(meta.get("name") or ""),
        allocatable=allocatable,
        labels=labels,
        taints=taints,
        unschedulable=cordoned or not ready,
        extensions={GPUS_EXTENSION: devices} if devices else {},
    )
    return NodeRecord(node, ready, cordoned, uuids)


def status_of(uid: str, rec: PodRecord, bind_to: str | None) -> PodStatus:
    return PodStatus(
        uid=uid,
        phase=rec.phase,
        node=rec.node or bind_to,
        exit_code=rec.exit_code,
        reason=rec.reason,
        cause=rec.cause,
        restarts=rec.restarts,
        ip=rec.ip,
        checkpointed=rec.checkpointed,
    )
