"""batch/v1 Job: one ``main`` template; ends with its ``Complete`` or ``Failed`` condition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Workload, conditions
from vglobal.model.kinds import batch_job


@dataclass(frozen=True, slots=True)
class BatchJob(Workload):
    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        conds = conditions(status)
        if "Complete" in conds:
            return "Succeeded", ""
        if "Failed" in conds:
            c = conds["Failed"]
            return "Failed", f"{c.get('reason', '')}: {c.get('message', '')}".strip(": ")
        return ("Running" if int(status.get("active") or 0) > 0 else "Pending"), ""


ADAPTER = BatchJob(batch_job.KIND, "nothing (batch/v1)", builtin=True)
