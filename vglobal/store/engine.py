"""Engines and sessions. The caller of ``session_scope`` owns the one transaction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker


def rowcount(result: object) -> int:
    """Rows an UPDATE or DELETE touched (typed access to CursorResult.rowcount)."""
    return int(getattr(result, "rowcount", 0))


def joined(names: Sequence[str]) -> str:
    """Many names as one parameter, split by the server with ``string_to_array(:p, ',')``.

    The driver adapts a long list element by element in Python; one string goes in one step. For
    names that cannot hold a comma (uids, cluster and queue names); other lists go as binary
    arrays (``%(p)b``), which the driver also writes without escaping each element.
    """
    text = ",".join(names)
    if text.count(",") != max(len(names) - 1, 0):
        raise ValueError("a name holds a comma")
    return text


def normalize_url(url: str) -> str:
    """Use the psycopg 3 driver whatever spelling of a Postgres URL we are given."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def make_engine(url: str, *, pool_size: int = 10) -> sa.Engine:
    return sa.create_engine(
        normalize_url(url),
        pool_size=pool_size,
        max_overflow=20,
        pool_pre_ping=True,
        pool_recycle=1800,
        isolation_level="READ COMMITTED",
    )


def make_sessionmaker(engine: sa.Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


@contextmanager
def dry_run_scope(factory: sessionmaker[Session], dry_run: bool) -> Iterator[Session]:
    """``session_scope``, or with ``dry_run`` one whose writes are all rolled back: a dry run does
    every check and write the real call does and keeps none (its notifications go with them)."""
    if not dry_run:
        with session_scope(factory) as session:
            yield session
        return
    session = factory()
    try:
        yield session
    finally:
        session.rollback()
        session.close()
