"""The workload kinds a controller in the member cluster turns into pods (KubeRay's RayCluster and
RayJob, LeaderWorkerSet, Deployment and StatefulSet with Volcano's gang annotation, batch/v1 Job),
read into the same ``Job`` the hub admits Volcano Jobs as.

Each kind is one record in ``vglobal.model.kinds``; the tables here are derived from them. Each
becomes tasks named as the agent names the object's pod templates (``head``, each worker group's
``groupName``, ``submitter``; ``leader``, ``worker``; ``main``), with its gang as Volcano and
KubeRay derive it (``kinds/reading.py`` holds what they share).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from vglobal.model.errors import ManifestError
from vglobal.model.job import Job, parse_job
from vglobal.model.kinds import WORKLOADS, kind_of, on_define, volcano_job
from vglobal.model.kinds.reading import (
    GROUP_MIN_MEMBER,
    PRIORITY_LABEL,
    QUEUE_LABELS,
    SUBMITTER,
    TOPOLOGY_MODE_LABEL,
    TOPOLOGY_TIER_LABEL,
    WorkloadManifest,
    default_submitter,
)

__all__ = [
    "GROUP_MIN_MEMBER",
    "LONG_RUNNING",
    "PRIORITY_LABEL",
    "QUEUE_LABELS",
    "READERS",
    "SUBMITTER",
    "TOPOLOGY_MODE_LABEL",
    "TOPOLOGY_TIER_LABEL",
    "VOLCANO_JOB",
    "WorkloadManifest",
    "default_submitter",
    "is_workload",
    "kind_name",
    "long_running",
    "parse_run",
    "parse_workload",
]

# (apiVersion, kind) -> its reader, for the kinds a controller runs
READERS: dict[tuple[str, str], Callable[[Mapping[str, Any]], Job]] = {k.key: k.reader for k in WORKLOADS}
on_define(lambda k: READERS.__setitem__(k.key, k.reader))
# Kinds whose objects hold their pods until deleted: they run until cancelled or deleted.
LONG_RUNNING = frozenset(k.kind for k in WORKLOADS if k.long_running)


def long_running(api_version: str | None, kind: str | None) -> bool:
    """A kind whose pods run until it is deleted: not preemptable unless it says so."""
    record = kind_of({"apiVersion": api_version, "kind": kind})
    return record is not None and record.long_running


def parse_workload(doc: Mapping[str, Any]) -> Job:
    """Validate one manifest of a kind in READERS; raises ManifestError naming every bad field."""
    reader = READERS.get((str(doc.get("apiVersion")), str(doc.get("kind"))))
    if reader is None:
        what = f'"{doc.get("kind")}" ({doc.get("apiVersion")})'
        raise ManifestError.one("kind", f"{what} is not a workload kind")
    return reader(doc)


VOLCANO_JOB = volcano_job.KIND.shown


def kind_name(doc: Mapping[str, Any]) -> str:
    """The kind a job was submitted as, told apart from batch/v1's Job: a Volcano Job is
    ``VolcanoJob`` (so is a HyperJob's child), a workload its own kind."""
    record = kind_of(doc)
    if record is not None:
        return record.shown
    kind = str(doc.get("kind") or "")
    return VOLCANO_JOB if kind == "Job" else kind


def is_workload(doc: Mapping[str, Any]) -> bool:
    record = kind_of(doc)
    return record is not None and not record.agent_makes_pods


def parse_run(doc: Mapping[str, Any]) -> Job:
    """A dispatched job's manifest, of any kind an agent runs (a Volcano Job or a workload)."""
    return parse_workload(doc) if is_workload(doc) else parse_job(doc)
