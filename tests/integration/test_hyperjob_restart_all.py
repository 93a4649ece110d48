"""Two children of a RestartAll HyperJob that fail at the same moment on two clusters, reported by
their two agents in concurrent transactions on a real Postgres: the HyperJob restarts exactly once
(each child re-queued once, one event each), and neither report waits on the other in a cycle."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from tests.integration.test_report_batches import status
from vglobal.api.v1 import agent_pb2 as pb
from vglobal.hub.agents import record as recorder
from vglobal.hub.agents.child_failures import REASON
from vglobal.hub.submit import Accepted, store
from vglobal.model.hyperjob import HyperJob
from vglobal.model.manifests import parse_manifests
from vglobal.store.engine import make_engine, make_sessionmaker, session_scope
from vglobal.store.repo import clusters as clusters_repo

PAIR = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: pair}
spec:
  failurePolicy: RestartAll
  replicatedJobs:
  - name: w
    replicas: 2
    templateSpec:
      tasks:
      - name: main
        replicas: 1
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""

ROUNDS = 12


def _seed(engine: sa.Engine) -> list[str]:
    """The HyperJob's two children stored as the hub stores them, and the clusters east and west."""
    (hj,) = parse_manifests(PAIR)
    assert isinstance(hj, HyperJob)
    with session_scope(make_sessionmaker(engine)) as session:
        for name in ("east", "west"):
            clusters_repo.register(
                name,
                session=session,
                labels={},
                nodes=[],
                free={f"{name}-0": {"cpu": 8}},
                stream=name,
                identity=name,
            )
        stored = store(Accepted(hj, None, None).submissions(session=session), session=session)
    assert [row.name for row, _ in stored] == ["pair-w-0", "pair-w-1"]
    return [row.uid for row, _ in stored]


def _run_on(engine: sa.Engine, placed: dict[str, str], generation: int) -> None:
    """Each child running on its cluster as run ``generation``, no restart counted yet."""
    with engine.begin() as conn:
        for uid, cluster in placed.items():
            conn.execute(
                sa.text(
                    "UPDATE resource_bindings SET phase = 'Running', cluster = :c, generation = :g, "
                    "attempts = 0 WHERE job_uid = :u"
                ),
                {"c": cluster, "g": generation, "u": uid},
            )


def _restart_events(engine: sa.Engine, uid: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.text("SELECT count(*) FROM events WHERE job_uid = :u AND reason = :r"),
                {"u": uid, "r": REASON},
            ).scalar_one()
        )


def test_two_children_failing_at_once_restart_the_hyperjob_exactly_once(database_url: str) -> None:
    engine = make_engine(database_url, pool_size=4)
    try:
        first, second = _seed(engine)
        placed = {first: "east", second: "west"}
        errors: list[BaseException] = []
        for gen in range(1, ROUNDS + 1):
            _run_on(engine, placed, gen)
            barrier = threading.Barrier(2)

            def report(uid: str, cluster: str, gen: int = gen, barrier: threading.Barrier = barrier) -> None:
                message: pb.AgentMessage = status(uid, gen, "Failed")
                try:
                    with session_scope(make_sessionmaker(engine)) as session:
                        barrier.wait(timeout=60)  # both transactions open before either records
                        recorder.record(cluster, [message], stream=cluster, exclude_for=60.0, session=session)
                except BaseException as exc:  # a deadlock is what this test looks for
                    errors.append(exc)

            threads = [threading.Thread(target=report, args=(u, c)) for u, c in placed.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            assert not errors, f"round {gen}: {errors[0]!r}"
            with engine.connect() as conn:
                rows = conn.execute(
                    sa.text(
                        "SELECT job_uid, phase, cluster, attempts FROM resource_bindings ORDER BY job_uid"
                    )
                ).all()
            # One restart: both re-queued (Suspended, no cluster) and counted once, one event each.
            assert [(r[1], r[2], r[3]) for r in rows] == [("Suspended", None, 1)] * 2, f"round {gen}"
            assert [_restart_events(engine, u) for u in placed] == [gen, gen], f"round {gen}"
    finally:
        engine.dispose()


def test_one_agent_reporting_both_failures_in_one_batch_restarts_once(database_url: str) -> None:
    engine = make_engine(database_url, pool_size=2)
    try:
        first, second = _seed(engine)
        _run_on(engine, {first: "east", second: "east"}, 1)
        messages = [status(first, 1, "Failed"), status(second, 1, "Failed")]
        with session_scope(make_sessionmaker(engine)) as session:
            recorder.record("east", messages, stream="east", exclude_for=60.0, session=session)
        with engine.connect() as conn:
            attempts = conn.execute(sa.text("SELECT attempts FROM resource_bindings")).scalars().all()
        assert attempts == [1, 1]
        assert [_restart_events(engine, u) for u in (first, second)] == [1, 1]
    finally:
        engine.dispose()
