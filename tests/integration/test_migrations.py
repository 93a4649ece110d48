from __future__ import annotations

import json

import sqlalchemy as sa

from vglobal.store import migrate
from vglobal.store.engine import make_engine
from vglobal.store.tables import metadata


def test_one_alembic_head() -> None:
    assert len(migrate.heads()) == 1


def test_upgrade_downgrade_upgrade(empty_database_url: str) -> None:
    engine = make_engine(empty_database_url, pool_size=1)
    try:
        migrate.upgrade(engine)
        assert migrate.current_revision(engine) == migrate.heads()[0]
        tables = set(sa.inspect(engine).get_table_names())
        assert set(metadata.tables) <= tables
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT name FROM queues")).scalars().all() == ["default"]
        migrate.downgrade(engine, "base")
        assert migrate.current_revision(engine) is None
        assert not set(metadata.tables) & set(sa.inspect(engine).get_table_names())
        migrate.upgrade(engine)
        assert migrate.current_revision(engine) == migrate.heads()[0]
    finally:
        engine.dispose()


def test_migrations_match_the_tables(empty_database_url: str) -> None:
    """The migration history creates exactly what tables.py declares (no forgotten column)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = make_engine(empty_database_url, pool_size=1)
    try:
        migrate.upgrade(engine)
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        assert diff == []
        # Storage parameters are not compared by autogenerate: the one tables.py declares.
        with engine.connect() as conn:
            options = conn.execute(
                sa.text("SELECT reloptions FROM pg_class WHERE relname = 'resource_bindings'")
            ).scalar_one()
        declared = metadata.tables["resource_bindings"].dialect_options["postgresql"]["with"]
        assert options == [f"{k}={v}" for k, v in declared.items()]
    finally:
        engine.dispose()


def test_concurrent_upgrades_serialise(empty_database_url: str) -> None:
    """Replicas starting together: both migrate under the lock and both end at head."""
    import threading

    engines = [make_engine(empty_database_url, pool_size=1) for _ in range(2)]
    errors: list[BaseException] = []

    def run(e: sa.Engine) -> None:
        try:
            migrate.upgrade(e)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert migrate.current_revision(engines[0]) == migrate.heads()[0]
    finally:
        for e in engines:
            e.dispose()


def test_0004_names_the_task_of_every_stored_pod_and_downgrade_removes_it(empty_database_url: str) -> None:
    engine = make_engine(empty_database_url, pool_size=1)
    pods = [
        {"pod": "train-worker-1", "node": "n1", "phase": "Running"},
        {"pod": "train-ps-0", "node": "n2", "phase": "Running"},
        {"pod": "train-my-task-0", "node": "", "phase": "Pending"},
    ]
    try:
        migrate.upgrade(engine, "0003")
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (uid, namespace, name, queue, min_available, request, gang, manifest, "
                    "placements) VALUES ('u', 'default', 'train', 'default', 1, '{}', '[]', '{}', "
                    "CAST(:p AS jsonb)), ('v', 'default', 'idle', 'default', 1, '{}', '[]', '{}', '[]')"
                ),
                {"p": json.dumps(pods)},
            )
            conn.execute(sa.text("INSERT INTO resource_bindings (job_uid, resources) VALUES ('u', '{}')"))
        migrate.upgrade(engine)
        with engine.connect() as conn:
            stored = dict(conn.execute(sa.text("SELECT uid, placements FROM jobs")).all())
            kind = conn.execute(sa.text("SELECT reason_kind FROM resource_bindings")).scalar_one()
        assert stored["u"] == [
            {**p, "task": t} for p, t in zip(pods, ["worker", "ps", "my-task"], strict=True)
        ]
        assert stored["v"] == [] and kind == ""
        migrate.downgrade(engine, "0003")
        with engine.connect() as conn:
            stored = dict(conn.execute(sa.text("SELECT uid, placements FROM jobs")).all())
        assert stored == {"u": pods, "v": []}
    finally:
        engine.dispose()
