"""What a lookup of something deleted says: who deleted it and when, from the event that outlives it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from vglobal.hub.errors import NotFound
from vglobal.store.repo import events as events_repo


def explained(exc: NotFound, subject: str, *, session: Session) -> NotFound:
    """``exc``, naming who deleted ``subject`` (``job default/x``) and when, if that is on record."""
    deleted = events_repo.last_about(subject, "Deleted", session=session)
    if deleted is None:
        return exc
    when = deleted.time.strftime("%Y-%m-%dT%H:%M:%SZ")
    return NotFound(f"{exc}: deleted by {deleted.principal or 'an unknown caller'} at {when}")
