"""Pods as the job controller creates them and as a backend reports them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from vglobal.model.resources import ResourceVector


class PodPhase(StrEnum):
    Pending = "Pending"
    Running = "Running"
    Succeeded = "Succeeded"
    Failed = "Failed"


FINISHED_POD_PHASES = frozenset({PodPhase.Succeeded, PodPhase.Failed})


@dataclass(frozen=True, slots=True)
class PodManifest:
    """One pod to create. ``uid`` is unique per incarnation: a restarted pod keeps its name only."""

    uid: str
    name: str  # <job>-<task>-<index>
    namespace: str
    job_uid: str
    task: str
    index: int
    request: ResourceVector  # Σ container requests, without the pod slot
    obj: dict[str, Any]  # the pod object (metadata + spec) after the job plugins

    @property
    def annotations(self) -> dict[str, str]:
        meta = self.obj.get("metadata") or {}
        return dict(meta.get("annotations") or {})


@dataclass(frozen=True, slots=True)
class PodStatus:
    """What the backend observes for one pod."""

    uid: str
    phase: PodPhase
    node: str | None = None
    exit_code: int | None = None
    started: float | None = None
    finished: float | None = None
    reason: str = ""  # why it ended, as the cluster says (Evicted, OOMKilled, Error)
    # Why it does not run as it should, as the cluster says ("ImagePullBackOff: Back-off pulling
    # image ...", "OOMKilled, exit 137, restart 3"); "" when nothing is wrong.
    cause: str = ""
    restarts: int = 0
    name: str = ""  # its name in the cluster when the cluster named it (a workload's pods)
    ip: str = ""
    # When it last saved its work, as it declares it (vglobal.io/checkpointed-at, a Checkpointed
    # event; the sim backend: its job's checkpoint interval), epoch seconds; None: never.
    checkpointed: float | None = None
