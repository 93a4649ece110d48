"""What ``apply_job`` and ``scale_job`` of both clients send: kubectl's apply of one job, and the
job's live manifest with new replicas applied by the ``vglobal-scale`` field manager."""

from __future__ import annotations

import json

import grpc

from vglobal.api.v1 import jobs_pb2
from vglobal.model import apply_rules
from vglobal.sdk.retries import VGlobalError


def apply_request(
    manifest: str,
    *,
    request_id: str = "",
    field_validation: str = "",
    dry_run: bool = False,
    field_manager: str = "",
    server_side: bool = False,
    force_conflicts: bool = False,
) -> jobs_pb2.ApplyJobRequest:
    return jobs_pb2.ApplyJobRequest(
        manifest=manifest,
        request_id=request_id,
        field_validation=field_validation,
        dry_run=dry_run,
        field_manager=field_manager,
        server_side=server_side,
        force_conflicts=force_conflicts,
    )


def scale_request(
    job: jobs_pb2.Job, replicas: int, task: str = "", dry_run: bool = False
) -> jobs_pb2.ApplyJobRequest:
    """``job`` as GetJob returns it (with its manifest), scaled; INVALID_ARGUMENT naming what is
    wrong (a kind that does not scale, a task it lacks, negative replicas)."""
    try:
        scaled = apply_rules.scale(json.loads(job.manifest), replicas, task)
    except ValueError as exc:
        what = f"job {job.namespace}/{job.name}: {exc}"
        raise VGlobalError(grpc.StatusCode.INVALID_ARGUMENT, what) from None
    return apply_request(json.dumps(scaled), field_manager=apply_rules.SCALE_MANAGER, dry_run=dry_run)
