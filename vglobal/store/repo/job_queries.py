"""The job list's filters, sort orders and keyset pages, and job counts grouped by any of its
columns: the reads behind ListJobs and CountJobs. Each is one statement; the indexes of migration
0009 serve the first page of a filtered list in each sort order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.model.binding import FINISHED, BindingPhase, values
from vglobal.model.phases import JobPhase
from vglobal.store.tables import jobs, resource_bindings

_j = jobs.c
_b = resource_bindings.c
JOB_PHASES = frozenset(p.value for p in JobPhase)
BINDING_PHASES = frozenset(p.value for p in BindingPhase)

# A literal, not a parameter: the expression is the one its index holds (migration 0009).
NO_CLUSTER: sa.ColumnElement[str] = sa.literal_column("''")
# Sort key -> the column it orders by (ties broken by uid). "" is (namespace, name), unique.
SORT_KEYS: dict[str, Any] = {
    "name": _j.name,
    "created": _j.created_at,
    "phase": _j.phase,
    "queue": _j.queue,
    # Jobs on no cluster sort as the empty name: a keyset compares no NULLs.
    "cluster": sa.func.coalesce(_b.cluster, NO_CLUSTER),
}
# Group-by field -> the column it groups by, and whether it is the binding's.
GROUP_KEYS: dict[str, tuple[Any, bool]] = {
    "phase": (_j.phase, False),
    "binding_phase": (_b.phase, True),
    "queue": (_j.queue, False),
    "cluster": (sa.func.coalesce(_b.cluster, NO_CLUSTER), True),
    "namespace": (_j.namespace, False),
}


@dataclass(frozen=True)
class JobFilter:
    """Which jobs a list or count covers; an empty field does not filter."""

    queue: str = ""
    namespace: str = ""
    phase: str = ""  # the job's phase or its binding's
    cluster: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    name_contains: str = ""  # ignoring case
    submitted_by: str = ""
    created_after: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive
    finished_after: datetime | None = None  # inclusive; leaves out unfinished jobs
    owner_uid: str = ""
    queues: Sequence[str] | None = None  # when given, the only queues whose jobs may be seen

    def needs_binding(self) -> bool:
        return self.phase in BINDING_PHASES or bool(self.cluster or self.finished_after)


def _like_escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def conditions(f: JobFilter) -> list[sa.ColumnElement[bool]]:
    out: list[sa.ColumnElement[bool]] = []
    if f.labels:
        out.append(_j.labels.contains(f.labels))
    if f.owner_uid:
        out.append(_j.owner_uid == f.owner_uid)
    if f.queue:
        out.append(_j.queue == f.queue)
    if f.queues is not None:
        out.append(_j.queue.in_(list(f.queues)))
    if f.namespace:
        out.append(_j.namespace == f.namespace)
    if f.name_contains:
        out.append(_j.name.ilike(f"%{_like_escaped(f.name_contains)}%", escape="\\"))
    if f.submitted_by:
        out.append(_j.submitted_by == f.submitted_by)
    if f.created_after is not None:
        out.append(_j.created_at >= f.created_after)
    if f.created_before is not None:
        out.append(_j.created_at < f.created_before)
    if f.phase:
        # The job's phase or its binding's: only the side that has a phase of that name.
        sides = [
            c == f.phase
            for c, names in ((_j.phase, JOB_PHASES), (_b.phase, BINDING_PHASES))
            if f.phase in names
        ]
        out.append(sa.or_(*sides) if sides else sa.false())
    if f.cluster:
        out.append(_b.cluster == f.cluster)
    if f.finished_after is not None:
        # The phases of the partial index on finish time (migration 0007).
        out.append(_b.phase.in_(values(FINISHED)))
        out.append(_b.finished_at >= f.finished_after)
    return out


_JOINED = jobs.join(resource_bindings, _b.job_uid == _j.uid)


@dataclass(frozen=True)
class Page:
    """Where a page starts: after this sort key value (and uid), in this order."""

    sort_by: str  # a SORT_KEYS key, or "" for (namespace, name)
    descending: bool = False
    after: tuple[Any, str] | None = None  # (sort value, uid), or (namespace, name) for ""


def ordered(stmt: sa.Select[Any], page: Page, limit: int) -> sa.Select[Any]:
    """``stmt`` in the page's order, from after its key, at most ``limit`` rows."""
    if page.sort_by:
        keys: tuple[Any, ...] = (SORT_KEYS[page.sort_by], _j.uid)
    else:
        keys = (_j.namespace, _j.name)
    if page.after is not None:
        left, right = sa.tuple_(*keys), sa.tuple_(*(sa.literal(v) for v in page.after))
        stmt = stmt.where(left < right if page.descending else left > right)
    order = [k.desc() for k in keys] if page.descending else list(keys)
    return stmt.order_by(*order).limit(limit)


def count_statement(
    f: JobFilter,
    group_by: Sequence[str],
    extra: Sequence[sa.ColumnElement[bool]] = (),
    *,
    ordered: bool = True,
) -> sa.Select[Any]:
    """The groups' values (labelled g0, g1, ...) and counts ``n`` of the jobs ``f`` matches,
    counted row by row. The bindings are joined only when a filter or a group needs them."""
    cols = [GROUP_KEYS[g][0].label(f"g{i}") for i, g in enumerate(group_by)]
    joined = f.needs_binding() or any(GROUP_KEYS[g][1] for g in group_by) or bool(extra)
    stmt = sa.select(*cols, sa.func.count().label("n")).select_from(_JOINED if joined else jobs)
    stmt = stmt.where(*conditions(f), *extra)
    if cols:
        positions: list[Any] = [sa.literal_column(str(i + 1)) for i in range(len(cols))]
        stmt = stmt.group_by(*positions)
        if ordered:
            stmt = stmt.order_by(*positions)
    return stmt


def grouped_rows(stmt: sa.Select[Any], width: int, *, session: Session) -> list[tuple[tuple[str, ...], int]]:
    return [(tuple(r[:width]), int(r[width])) for r in session.execute(stmt).all()]
