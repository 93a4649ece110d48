"""Volcano's Job: its tasks as written; the agent makes its pods itself (no controller needed)."""

from __future__ import annotations

from vglobal.model import job
from vglobal.model.kinds.record import WorkloadKind

KIND = WorkloadKind(
    job.API_VERSION,
    job.KIND,
    "jobs",
    "job.batch.volcano.sh",
    job.parse_job,
    job.JobManifest,
    order=0,
    agent_makes_pods=True,
    listed_as="VolcanoJob",
)
