"""A stored job's manifest replaced by kubectl's apply (``vglobal apply``, ``vglobal scale``); the
generation its cluster reports it carries out is written with the run's status (runs.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.forms import tasks_to_json
from vglobal.model.records import JobRow
from vglobal.model.static_facts import manifest_facts
from vglobal.store.repo.jobs import NewJob, _row, _select
from vglobal.store.tables import jobs, resource_bindings


def lock_job(namespace: str, name: str, *, session: Session) -> JobRow | None:
    """The job, its row and its binding's locked until the caller commits (an apply's read)."""
    r = session.execute(
        _select().where(jobs.c.namespace == namespace, jobs.c.name == name).with_for_update()
    ).first()
    return _row(r) if r else None


def respecify(
    uid: str,
    new: NewJob,
    *,
    spec_generation: int,
    managed: Mapping[str, str],
    waiting: bool,
    session: Session,
) -> None:
    """An applied manifest replaces the job's: every column made of it. A waiting job starts its
    wait again, its binding charged the new request (the dispatcher reads its facts again); a
    running one keeps its binding, and its cluster is sent the new manifest."""
    dumps = json.dumps
    values: dict[str, Any] = {
        "request_id": new.request_id,
        "manifest": new.manifest,
        "labels": dict(new.labels),
        "request": dict(new.request),
        "facts": manifest_facts(new.manifest),
        "spec_generation": spec_generation,
        "managed_fields": dict(managed),
        # A running job's gang may change with its replicas (a RayCluster's worker group): its
        # next admission, after a failover, is of the new one.
        "min_available": new.min_available,
        "gang": new.gang.to_json(),
        "pod_requests": new.pod_requests,
        "updated_at": sa.func.now(),
    }
    if waiting:
        values |= {
            "queue": new.queue,
            "priority_class_name": new.priority_class_name,
            "priority": new.priority,
            "placement": new.placement.to_json(),
            "tasks": json.loads(dumps(tasks_to_json(new.tasks))),
        }
    session.execute(sa.update(jobs).where(jobs.c.uid == uid).values(**values))
    if waiting:
        session.execute(
            sa.update(resource_bindings)
            .where(resource_bindings.c.job_uid == uid, resource_bindings.c.phase == "Suspended")
            .values(
                resources=dict(new.request),
                waiting_since=sa.func.clock_timestamp(),
                reason="",
                reason_kind="",
                updated_at=sa.func.now(),
            )
        )


def set_managed(uid: str, managed: Mapping[str, str], *, session: Session) -> None:
    session.execute(sa.update(jobs).where(jobs.c.uid == uid).values(managed_fields=dict(managed)))
