"""LeaderWorkerSet: leader and worker templates, each group's pods placed together; Running with
its ready replicas."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Template, Workload, dig, spec_of
from vglobal.model.kinds import leader_worker_set


def lws_size(raw: Mapping[str, Any]) -> int:
    """Pods per LeaderWorkerSet group (leader included); 1 when unset, as the API defaults it."""
    size = dig(raw, "spec", "leaderWorkerTemplate", "size")
    return size if isinstance(size, int) and size > 0 else 1


@dataclass(frozen=True, slots=True)
class LeaderWorkerSet(Workload):
    def templates(self, obj: dict[str, Any]) -> list[Template]:
        lwt = spec_of(obj).get("leaderWorkerTemplate")
        lwt = lwt if isinstance(lwt, dict) else {}
        out = []
        if isinstance(lwt.get("leaderTemplate"), dict):
            out.append(("leader", lwt["leaderTemplate"]))
        if isinstance(lwt.get("workerTemplate"), dict):
            out.append(("worker", lwt["workerTemplate"]))
        return out

    def roles(self, spec: Mapping[str, Any]) -> list[str]:
        """Without a leaderTemplate the leader is made from the worker's."""
        roles = Workload.roles(self, spec)
        return roles if "leader" in roles else ["leader", *roles]

    def group_of(self, role: str, index: int, raw: Mapping[str, Any]) -> int:
        """Leader i leads group i; worker j is in group j // (size - 1)."""
        size = lws_size(raw)
        if role == "leader":
            return index
        if role == "worker" and size > 1:
            return index // (size - 1)
        return -1


ADAPTER = LeaderWorkerSet(
    leader_worker_set.KIND, "the LeaderWorkerSet controller (leaderworkerset.x-k8s.io/v1)"
)
