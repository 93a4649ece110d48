"""The log of job changes behind WatchJobs: giving changes their revisions, reading, pruning.

Triggers (migration 0006) log each change of a job in the transaction that makes it, without a
revision. ``sequence`` numbers the committed ones afterwards, one at a time under the lock of the
``job_watch`` row, so a revision is never given to a change while an earlier-numbered one could
still appear: a reader that has seen revision R has seen every change up to R. The changes one
transaction made to one job become one event (its last state; ADDED if it began with the job's
insert, DELETED if it ended with the delete, nothing if it did both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.records import JobChange
from vglobal.store.engine import rowcount
from vglobal.store.tables import job_changes, job_watch

_c = job_changes.c

_SEQUENCE = sa.text(
    """
    WITH pending AS (
        SELECT id, kind,
               row_number() OVER (PARTITION BY xid, job_uid ORDER BY id DESC) AS from_last,
               first_value(kind) OVER (PARTITION BY xid, job_uid ORDER BY id) AS first_kind,
               bool_or(kind = 'DELETED') OVER (PARTITION BY xid, job_uid) AS deleted
        FROM job_changes WHERE revision IS NULL
    ), kept AS (
        SELECT id,
               CASE WHEN deleted THEN 'DELETED' WHEN first_kind = 'ADDED' THEN 'ADDED'
                    ELSE 'MODIFIED' END AS kind,
               row_number() OVER (ORDER BY id) AS n
        FROM pending WHERE from_last = 1 AND NOT (deleted AND first_kind = 'ADDED')
    ), merged AS (
        DELETE FROM job_changes WHERE id IN (SELECT id FROM pending EXCEPT SELECT id FROM kept)
    )
    UPDATE job_changes c SET revision = :base + k.n, kind = k.kind FROM kept k WHERE c.id = k.id
    """
)


@dataclass(frozen=True)
class Filters:
    """Which jobs a watcher follows; empty fields match every job."""

    queue: str = ""
    namespace: str = ""
    name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    queues: frozenset[str] | None = None  # the only queues it may see (None: every queue)

    def match(self, c: JobChange) -> bool:
        return (
            (not self.queue or c.queue == self.queue)
            and (self.queues is None or c.queue in self.queues)
            and (not self.namespace or c.namespace == self.namespace)
            and (not self.name or c.name == self.name)
            and all(c.labels.get(k) == v for k, v in self.labels.items())
        )

    def where(self) -> list[sa.ColumnElement[bool]]:
        out: list[sa.ColumnElement[bool]] = []
        if self.queue:
            out.append(_c.queue == self.queue)
        if self.queues is not None:
            out.append(_c.queue.in_(sorted(self.queues)))
        if self.namespace:
            out.append(_c.namespace == self.namespace)
        if self.name:
            out.append(_c.name == self.name)
        if self.labels:
            out.append(_c.labels.contains(dict(self.labels)))
        return out


def sequence(*, session: Session) -> tuple[int, int]:
    """Give every committed change without one its revision; returns (how many, the last revision).

    The ``job_watch`` row is locked first, so sequencers never overlap, and the numbering statement
    then sees every change committed before it (its own snapshot, taken after the lock).
    """
    base = int(
        session.execute(
            sa.select(job_watch.c.last_revision).where(job_watch.c.id == 1).with_for_update()
        ).scalar_one()
    )
    n = rowcount(session.execute(_SEQUENCE, {"base": base}))
    if n:
        session.execute(sa.update(job_watch).where(job_watch.c.id == 1).values(last_revision=base + n))
    return n, base + n


def bounds(*, session: Session) -> tuple[int, int]:
    """(pruned through, last revision): a watch may resume from any revision in between."""
    row = session.execute(
        sa.select(job_watch.c.pruned_through, job_watch.c.last_revision).where(job_watch.c.id == 1)
    ).one()
    return int(row[0]), int(row[1])


def last_revision(*, session: Session) -> int:
    return bounds(session=session)[1]


def _change(r: sa.Row[Any]) -> JobChange:
    return JobChange(
        revision=int(r.revision),
        kind=r.kind,
        job_uid=r.job_uid,
        namespace=r.namespace,
        name=r.name,
        queue=r.queue,
        labels=r.labels or {},
        state=r.state,
        time=r.time,
    )


def read(
    after: int,
    *,
    session: Session,
    until: int | None = None,
    filters: Filters | None = None,
    limit: int = 1000,
) -> list[JobChange]:
    """Changes with a revision above ``after`` (and at most ``until``), matching ``filters``, in order."""
    stmt = sa.select(job_changes).where(_c.revision > after)
    if until is not None:
        stmt = stmt.where(_c.revision <= until)
    if filters is not None:
        stmt = stmt.where(*filters.where())
    rows = session.execute(stmt.order_by(_c.revision).limit(limit)).all()
    return [_change(r) for r in rows]


def prune(*, session: Session, keep: int, older_than: datetime) -> int:
    """Forget sequenced changes beyond the newest ``keep`` and those logged before ``older_than``;
    returns how many. A watch resuming from before what is left gets OUT_OF_RANGE."""
    pruned, last = session.execute(
        sa.select(job_watch.c.pruned_through, job_watch.c.last_revision)
        .where(job_watch.c.id == 1)
        .with_for_update()
    ).one()
    by_age = session.execute(
        sa.select(sa.func.max(_c.revision)).where(_c.revision.is_not(None), _c.time < older_than)
    ).scalar()
    through = max(int(pruned), last - keep, int(by_age or 0))
    if through <= pruned:
        return 0
    n = rowcount(session.execute(sa.delete(job_changes).where(_c.revision <= through)))
    session.execute(sa.update(job_watch).where(job_watch.c.id == 1).values(pruned_through=through))
    return n


def pending(*, session: Session) -> int:
    """Committed changes still waiting for their revision."""
    return int(session.execute(sa.select(sa.func.count()).where(_c.revision.is_(None))).scalar_one())


def by_revisions(revisions: Sequence[int], *, session: Session) -> list[JobChange]:
    rows = session.execute(
        sa.select(job_changes).where(_c.revision.in_(list(revisions))).order_by(_c.revision)
    ).all()
    return [_change(r) for r in rows]
