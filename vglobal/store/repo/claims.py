"""The claims on freed room the last dispatch cycle returned (admission's next input)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.store.tables import admission_claims


def load(*, session: Session) -> list[dict[str, Any]]:
    """Every stored claim (admission/inputs.py claim_row), by the job it is for."""
    rows = session.execute(sa.select(admission_claims.c.claim).order_by(admission_claims.c.for_uid))
    return [dict(r.claim) for r in rows]


def store(rows: Sequence[dict[str, Any]], *, session: Session) -> None:
    """The claims standing now replace those stored."""
    session.execute(sa.delete(admission_claims))
    if rows:
        session.execute(sa.insert(admission_claims), [{"for_uid": r["for"], "claim": r} for r in rows])
