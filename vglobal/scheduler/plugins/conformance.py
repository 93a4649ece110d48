"""conformance: never evict kube-system or system-critical pods."""

from __future__ import annotations

from collections.abc import Sequence

from vglobal.scheduler.framework import PERMIT, Plugin
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.session import Session

_CRITICAL = frozenset({"system-cluster-critical", "system-node-critical"})


class ConformancePlugin(Plugin[Session]):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        def victims(_: TaskInfo, preemptees: Sequence[TaskInfo]) -> tuple[list[TaskInfo], int]:
            out = [
                t
                for t in preemptees
                if t.namespace != "kube-system" and t.spec.priority_class not in _CRITICAL
            ]
            return out, PERMIT

        ssn.add_preemptable_fn(self.name, victims)
        ssn.add_reclaimable_fn(self.name, victims)
