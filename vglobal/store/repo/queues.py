"""Queues and PriorityClasses."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.orm import Session

from vglobal.model.binding import ADMITTED, UNFINISHED, values
from vglobal.model.priority_class import PriorityClass
from vglobal.model.queue import Queue
from vglobal.model.records import PriorityClassRow, QueueRow, QueueUsage
from vglobal.store.engine import rowcount
from vglobal.store.repo import job_counts
from vglobal.store.tables import jobs, priority_classes, queues, resource_bindings

_ADMITTED = values(ADMITTED)


def _units(vec: Any) -> dict[str, int] | None:
    return None if vec is None else dict(vec.items())


def upsert_queue(queue: Queue, *, session: Session) -> None:
    values = {
        "name": queue.name,
        "parent": queue.parent,
        "weight": queue.weight,
        "priority": queue.priority,
        "state": queue.state,
        "reclaimable": queue.reclaimable,
        "capability": _units(queue.capability),
        "deserved": _units(queue.deserved),
        "guarantee": _units(queue.guarantee) or {},
        "manifest": queue.raw,
    }
    stmt = insert(queues).values(values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[queues.c.name],
        set_={k: stmt.excluded[k] for k in values if k != "name"} | {"updated_at": sa.func.now()},
    )
    session.execute(stmt)


def _queue_row(r: sa.Row[Any]) -> QueueRow:
    return QueueRow(
        name=r.name,
        parent=r.parent,
        weight=r.weight,
        priority=r.priority,
        state=r.state,
        reclaimable=r.reclaimable,
        capability=r.capability,
        deserved=r.deserved,
        guarantee=r.guarantee or {},
        manifest=r.manifest,
        created_at=r.created_at,
        status=r.status or {},
    )


def get_queue(name: str, *, session: Session, for_update: bool = False) -> QueueRow | None:
    stmt = sa.select(queues).where(queues.c.name == name)
    if for_update:
        stmt = stmt.with_for_update()
    row = session.execute(stmt).first()
    return _queue_row(row) if row else None


def list_queues(*, session: Session) -> list[QueueRow]:
    rows = session.execute(sa.select(queues).order_by(queues.c.created_at, queues.c.name)).all()
    return [_queue_row(r) for r in rows]


def with_rooms(*, session: Session) -> list[QueueRow]:
    """The queues whose figures split a room beyond gangs among clusters (status ``allowance``)."""
    rows = session.execute(
        sa.select(queues).where(queues.c.status.has_key("allowance")).order_by(queues.c.name)
    ).all()
    return [_queue_row(r) for r in rows]


def children(name: str, *, session: Session) -> list[str]:
    rows = session.execute(sa.select(queues.c.name).where(queues.c.parent == name)).scalars().all()
    return list(rows)


def set_state(name: str, state: str, *, session: Session) -> bool:
    res = session.execute(
        sa.update(queues)
        .where(queues.c.name == name)
        .values(
            state=state,
            manifest=sa.func.jsonb_set(
                queues.c.manifest,
                sa.cast(sa.literal("{spec,state}"), ARRAY(sa.Text)),
                sa.func.to_jsonb(sa.cast(state, sa.Text)),
                True,
            ),
            updated_at=sa.func.now(),
        )
    )
    return bool(rowcount(res))


def delete_queue(name: str, *, session: Session) -> bool:
    return bool(rowcount(session.execute(sa.delete(queues).where(queues.c.name == name))))


def live_job_count(name: str, *, session: Session) -> int:
    """Jobs of the queue that have not finished (suspended or holding resources)."""
    stmt = (
        sa.select(sa.func.count())
        .select_from(jobs.join(resource_bindings, resource_bindings.c.job_uid == jobs.c.uid))
        .where(jobs.c.queue == name)
        .where(resource_bindings.c.phase.in_(values(UNFINISHED)))
    )
    return int(session.execute(stmt).scalar_one())


# Per admitted job, as the dispatcher charges it: what its placed, unfinished pods hold, and at least
# its gang's minResources while not all of it is placed (gang: [[units, count], ...]).
_ALLOCATED_SQL = """
WITH adm AS (
  SELECT j.uid, j.queue, j.gang, j.pod_requests,
         CASE WHEN b.phase = 'Running' THEN j.placements ELSE '[]'::jsonb END AS placements
  FROM jobs j JOIN resource_bindings b ON b.job_uid = j.uid WHERE b.phase = ANY(:admitted)
), gang AS (
  SELECT a.uid, a.queue, r.key, sum(r.value::bigint * (s.shape->>1)::bigint) AS units
  FROM adm a, jsonb_array_elements(a.gang) AS s(shape), jsonb_each_text(s.shape->0) AS r
  GROUP BY a.uid, a.queue, r.key
), placed AS (
  SELECT a.uid, a.queue, r.key, sum(r.value::bigint) AS units
  FROM adm a, jsonb_array_elements(a.placements) AS p(pod),
       jsonb_each_text(a.pod_requests -> (p.pod->>'task')) AS r
  WHERE coalesce(p.pod->>'node', '') <> ''
    AND coalesce(p.pod->>'phase', '') NOT IN ('Succeeded', 'Failed', 'Terminated')
  GROUP BY a.uid, a.queue, r.key
)
SELECT queue, key, sum(greatest(coalesce(g.units, 0), coalesce(p.units, 0))) AS units,
       sum(coalesce(p.units, 0)) AS placed
FROM gang g FULL JOIN placed p USING (uid, queue, key)
GROUP BY queue, key
"""


def usage(*, session: Session) -> dict[str, QueueUsage]:
    """Per leaf queue: resources held by admitted, unfinished jobs, and pending/running job counts."""
    alloc_rows = session.execute(sa.text(_ALLOCATED_SQL), {"admitted": _ADMITTED}).all()
    # From the counts the triggers keep (migration 0011), not a count of every job.
    counts = job_counts.queue_counts(session=session)
    alloc: dict[str, dict[str, int]] = {}
    ran: dict[str, dict[str, int]] = {}
    for q, key, units, placed in alloc_rows:
        alloc.setdefault(q, {})[key] = int(units)
        if placed:
            ran.setdefault(q, {})[key] = int(placed)
    out: dict[str, QueueUsage] = {}
    names = set(alloc) | set(counts)
    for q in names:
        pending, running = counts.get(q, (0, 0))
        out[q] = QueueUsage(
            allocated=alloc.get(q, {}), pending=pending, running=running, placed=ran.get(q, {})
        )
    return out


def upsert_priority_class(pc: PriorityClass, *, session: Session) -> None:
    values = {
        "name": pc.name,
        "value": pc.value,
        "global_default": pc.global_default,
        "preemption_policy": pc.preemption_policy,
        "manifest": pc.raw,
    }
    stmt = insert(priority_classes).values(values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[priority_classes.c.name], set_={k: stmt.excluded[k] for k in values if k != "name"}
    )
    session.execute(stmt)


def list_priority_classes(*, session: Session) -> list[PriorityClassRow]:
    rows = session.execute(sa.select(priority_classes).order_by(priority_classes.c.value.desc())).all()
    return [PriorityClassRow(r.name, r.value, r.global_default, r.preemption_policy) for r in rows]


def delete_priority_class(name: str, *, session: Session) -> PriorityClassRow | None:
    """Remove a priority class; returns it as it was (None: there was none)."""
    r = session.execute(
        sa.delete(priority_classes).where(priority_classes.c.name == name).returning(priority_classes)
    ).first()
    return PriorityClassRow(r.name, r.value, r.global_default, r.preemption_policy) if r else None


def get_priority_class(name: str, *, session: Session) -> PriorityClassRow | None:
    r = session.execute(sa.select(priority_classes).where(priority_classes.c.name == name)).first()
    return PriorityClassRow(r.name, r.value, r.global_default, r.preemption_policy) if r else None


def set_statuses(statuses: dict[str, dict[str, Any]], *, session: Session) -> None:
    """The dispatcher's figures per queue (deserved, effective capability), written only when changed."""
    if not statuses:
        return
    names = sorted(statuses)
    session.execute(
        sa.text(
            "UPDATE queues AS q SET status = d.status "
            "FROM unnest(CAST(:names AS text[]), CAST(:statuses AS jsonb[])) AS d(name, status) "
            "WHERE q.name = d.name AND q.status IS DISTINCT FROM d.status"
        ),
        {"names": names, "statuses": [json.dumps(statuses[n], sort_keys=True) for n in names]},
    )
