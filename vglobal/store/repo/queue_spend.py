"""GPU-seconds per queue and UTC day (table queue_spend): the ledger budgets are charged from."""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.store.tables import queue_spend

# One statement for every (queue, day) charged since the last: added to what is stored.
_ADD = sa.text(
    "INSERT INTO queue_spend (queue, day, gpu_seconds) "
    "SELECT * FROM unnest(CAST(:queues AS text[]), CAST(:days AS int[]), CAST(:secs AS float8[])) "
    "ON CONFLICT (queue, day) DO UPDATE SET gpu_seconds = queue_spend.gpu_seconds + excluded.gpu_seconds"
)


def add(charges: Mapping[tuple[str, int], float], *, session: Session) -> None:
    if not charges:
        return
    keys = list(charges)
    session.execute(
        _ADD,
        {"queues": [q for q, _ in keys], "days": [d for _, d in keys], "secs": [charges[k] for k in keys]},
    )


def since(first_day: int, *, session: Session) -> dict[str, dict[int, float]]:
    """Per queue, its GPU-seconds per day from ``first_day`` on."""
    out: dict[str, dict[int, float]] = {}
    q = sa.select(queue_spend).where(queue_spend.c.day >= first_day)
    for r in session.execute(q):
        out.setdefault(r.queue, {})[r.day] = float(r.gpu_seconds)
    return out


def prune(before_day: int, *, session: Session) -> None:
    session.execute(sa.delete(queue_spend).where(queue_spend.c.day < before_day))
