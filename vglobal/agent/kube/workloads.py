"""The workload kinds whose pods a controller in the member cluster makes (KubeRay's RayCluster and
RayJob, LeaderWorkerSet, Deployment, StatefulSet, batch/v1 Job), as the agent follows them: the
object it writes for an admitted run, its status as the informer sees it, and which kinds the
cluster serves. Each kind's own part is its module in ``kinds/``.

The agent writes the object itself, with every pod template set to its own ``schedulerName`` and
labelled with the run (job uid, generation, the template's role), so the pods those controllers make
wait for the agent, which binds them as the gang it planned (as Volcano does for these kinds).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube import kinds
from vglobal.agent.kube.api import ApiError, KubeApi
from vglobal.agent.kube.kinds import KINDS, Workload, kind_of
from vglobal.agent.kube.records import GENERATION_LABEL, JOB_UID_LABEL
from vglobal.model.served import MISSING, SERVED, served_label

__all__ = ["KINDS", "Workload", "WorkloadRecord", "kind_of", "record_of", "served", "served_labels"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    """A workload object as the agent follows it."""

    kind: str
    namespace: str
    name: str
    uid: str
    job_uid: str
    generation: int
    phase: str  # Pending | Running | Succeeded | Failed
    message: str = ""
    deleting: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


def record_of(kind: Workload) -> Callable[[dict[str, Any]], WorkloadRecord]:
    """The informer's converter for one kind."""

    def convert(obj: dict[str, Any]) -> WorkloadRecord:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        phase, message = kind.phase(obj)
        try:
            generation = int(labels.get(GENERATION_LABEL) or 0)
        except ValueError:
            generation = 0
        return WorkloadRecord(
            kind=kind.kind,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            job_uid=str(labels.get(JOB_UID_LABEL) or ""),
            generation=generation,
            phase=phase,
            message=message,
            deleting=bool(meta.get("deletionTimestamp")),
        )

    return convert


def served(api: KubeApi) -> tuple[list[Workload], list[Workload]]:
    """(served, missing) workload kinds, by API discovery: a custom kind is served only while its
    CRD is installed (the controller behind it cannot be seen from the API; the README says what
    each kind needs)."""
    found: dict[str, set[str]] = {}
    ok: list[Workload] = []
    missing: list[Workload] = []
    for kind in kinds.KINDS:  # with the kinds defined at start
        if not kind.crd:
            ok.append(kind)
            continue
        if kind.api_version not in found:
            try:
                doc = api.request("GET", kind.api_path, timeout=(5.0, 10.0))
                found[kind.api_version] = {str(r.get("name")) for r in doc.get("resources") or []}
            except ApiError as exc:
                if exc.status != 404:
                    log.warning("cannot read API discovery of %s: %s", kind.api_version, exc)
                found[kind.api_version] = set()
        (ok if kind.plural in found[kind.api_version] else missing).append(kind)
    return ok, missing


def served_labels(ok: list[Workload], missing: list[Workload]) -> dict[str, str]:
    """Cluster labels that tell the hub (and its users) which kinds this cluster can run."""
    out = {served_label(k.resource): SERVED for k in ok}
    out.update({served_label(k.resource): MISSING for k in missing})
    return out
