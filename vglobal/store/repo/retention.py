"""Removing old finished jobs: their bindings and events go with them (ON DELETE CASCADE)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from vglobal.store.repo.live import FINISHED_SQL, cursor


def delete_finished_before(age: float, *, limit: int, session: Session) -> int:
    """Delete at most ``limit`` jobs whose binding finished more than ``age`` seconds ago, oldest
    first; returns how many. Found by the finish-time index over finished bindings (migration
    0007); rows another transaction holds are skipped, to be taken by a later call."""
    with cursor(session) as cur:
        cur.execute(
            "WITH old AS (SELECT job_uid FROM resource_bindings "
            f"  WHERE {FINISHED_SQL} AND finished_at < now() - make_interval(secs => %(age)s) "
            "  ORDER BY finished_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
            "DELETE FROM jobs WHERE uid IN (SELECT job_uid FROM old)",
            {"age": age, "limit": limit},
        )
        return max(cur.rowcount, 0)
