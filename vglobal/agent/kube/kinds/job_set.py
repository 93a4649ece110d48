"""JobSet: each replicatedJob's pod template (the role is the replicatedJob's name); ends with its
``Completed`` or ``Failed`` condition, Running once a child Job has a pod ready or active."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vglobal.agent.kube.kinds.base import Template, Workload, conditions, dig, spec_of
from vglobal.model.kinds import job_set


def ended(status: Mapping[str, Any], done: str, failed: str) -> tuple[str, str] | None:
    """(phase, message) when the status's conditions say the run ended, else None."""
    conds = conditions(status)
    if done in conds:
        return "Succeeded", str(conds[done].get("message") or "")
    if failed in conds:
        c = conds[failed]
        return "Failed", f"{c.get('reason', '')}: {c.get('message', '')}".strip(": ")
    return None


def all_ready(jobs: Any) -> bool:
    """Every replicated job's active Jobs are ready, none failed, and some are ready or done
    (JobSet's ``replicatedJobsStatus``: counts of Jobs; a ready Job is an active one whose pods
    are ready or succeeded up to its parallelism)."""
    rows = [j for j in jobs or [] if isinstance(j, Mapping)]

    def n(row: Mapping[str, Any], key: str) -> int:
        return int(row.get(key) or 0)

    return bool(rows) and all(
        n(j, "ready") >= n(j, "active") and n(j, "ready") + n(j, "succeeded") > 0 and not n(j, "failed")
        for j in rows
    )


@dataclass(frozen=True, slots=True)
class JobSet(Workload):
    def templates(self, obj: dict[str, Any]) -> list[Template]:
        out = []
        for rj in spec_of(obj).get("replicatedJobs") or []:
            tmpl = dig(rj, "template", "spec", "template")
            if isinstance(rj, dict) and isinstance(tmpl, dict):
                out.append((str(rj.get("name", "")), tmpl))
        return out

    def phase(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        status = obj.get("status") or {}
        end = ended(status, "Completed", "Failed")
        if end is not None:
            return end
        return ("Running" if all_ready(status.get("replicatedJobsStatus")) else "Pending"), ""


ADAPTER = JobSet(job_set.KIND, "the JobSet controller (jobset.x-k8s.io/v1alpha2)")
