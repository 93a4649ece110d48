"""The dispatcher's snapshot reads only the bindings written since its last read: whatever happens
to bindings in between, the snapshot it builds equals one built from a full read."""

from __future__ import annotations

import random
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from vglobal.admission import Snapshot
from vglobal.config import HubSettings
from vglobal.hub.dispatch.snapshot import SnapshotReader
from vglobal.model.forms import Gang, Placement, PodShape
from vglobal.model.reasons import WaitKind
from vglobal.model.resources import ResourceVector
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import bindings as bindings_repo
from vglobal.store.repo import clusters as clusters_repo
from vglobal.store.repo import jobs as jobs_repo
from vglobal.store.repo import live as live_repo

SETTINGS = HubSettings(database_url="unused")
KINDS = [
    "submit",
    "admit",
    "run",
    "report",
    "finish",
    "requeue",
    "reason",
    "delete",
    "heartbeat",
    "inventory",
]
NODE_NAMES = ["n0", "n1"]
NODES: list[dict[str, Any]] = [
    {"name": n, "allocatable": {"cpu": 64000, "memory": 2**38}} for n in NODE_NAMES
]


def new_job(uid: str, cpu: int) -> jobs_repo.NewJob:
    return jobs_repo.NewJob(
        uid=uid,
        namespace="ns",
        name=uid,
        request_id=None,
        queue="default",
        priority_class_name=None,
        priority=0,
        min_available=1,
        request={"cpu": cpu},
        gang=Gang((PodShape(ResourceVector({"cpu": cpu}), 1),)),
        pod_requests={"main": {"cpu": cpu}},
        placement=Placement(),
        manifest={},
        tasks=(),
    )


def summary(snap: Snapshot) -> dict[str, Any]:
    """What admission sees, in a form that does not depend on the order of reads."""
    return {
        "pending": sorted(
            (j.uid, j.waiting_since, sorted(j.excluded_clusters), dict(j.request)) for j in snap.pending
        ),
        "running": sorted(
            (r.uid, r.cluster, r.running_since, sorted((n, dict(v)) for n, v in r.placements.items()))
            for r in snap.running
        ),
        "allocated": {q.name: dict(q.allocated) for q in snap.queues},
        # handed in per queue (admission's memo keys on each queue's tuple): each holds its own jobs
        "by_queue": sorted(
            (queue, sorted(j.uid for j in jobs), all(j.queue == queue for j in jobs))
            for queue, jobs in snap.pending.by_queue.items()  # type: ignore[attr-defined]
        ),
        "unplaced": {c.name: sorted(str(g) for g in c.unplaced) for c in snap.clusters},
        "free": {
            c.name: [(n.name, dict(n.free), dict(n.allocatable)) for n in c.nodes] for c in snap.clusters
        },
    }


def snapshot_of(sessions: Any, cache: SnapshotReader) -> dict[str, Any]:
    with session_scope(sessions) as session:
        return summary(cache.read(SETTINGS, session=session))


def own_reasons(sessions: Any, reasons: list[tuple[str, str]]) -> live_repo.Written:
    """Wait reasons written as the dispatcher writes them; the cache is to take the rows in with
    ``knows``, at once or, as the hub's background explanation does, after its next read."""
    with session_scope(sessions) as session:
        return bindings_repo.set_reasons([(u, WaitKind.NoFit, r) for u, r in reasons], session=session)


def own_admissions(sessions: Any, kept: SnapshotReader, admits: list[tuple[str, str]]) -> None:
    """Admissions written as the dispatcher writes them (a cycle without reclaims)."""
    with session_scope(sessions) as session:
        _, written = bindings_repo.admit_written(admits, session=session)
        now = clusters_repo.db_now(session=session)
    kept.jobs.wrote(written, now)


def exclude(session: Session, uid: str) -> None:
    """Another writer's change to a waiting binding that admission sees: a cluster excluded."""
    until = clusters_repo.db_now(session=session) + 3600.0
    session.execute(
        sa.text(
            "UPDATE resource_bindings SET excluded_clusters = jsonb_build_object('c1', CAST(:t AS float8)) "
            "WHERE job_uid = :u"
        ),
        {"u": uid, "t": until},
    )


def count_full_reads(monkeypatch: Any) -> list[int]:
    calls: list[int] = []
    original = live_repo.live

    def counted(*, session: Session) -> list[live_repo.LiveBinding]:
        calls.append(1)
        return original(session=session)

    monkeypatch.setattr(live_repo, "live", counted)  # the module the snapshot code calls
    return calls


def step(session: Session, rng: random.Random, k: str) -> str:
    """One random change of the kinds the hub makes: submit, admit, start, report, finish,
    requeue (with an exclusion), reason, delete, an agent's heartbeat, a changed node inventory."""
    uids = list(session.execute(sa.text("SELECT job_uid, phase FROM resource_bindings")).all())
    by_phase: dict[str, list[str]] = {}
    for uid, phase in uids:
        by_phase.setdefault(phase, []).append(uid)
    suspended = by_phase.get("Suspended", [])
    holding = by_phase.get("Dispatched", []) + by_phase.get("Bound", []) + by_phase.get("Running", [])
    action = rng.choice(["submit", *KINDS])
    if not uids:
        action = "submit"
    if action == "submit":
        jobs_repo.insert_job(new_job(f"j{k}", rng.choice([1000, 2000, 4000])), session=session)
    elif action == "admit" and suspended:
        picked = rng.sample(suspended, min(len(suspended), rng.randint(1, 3)))
        bindings_repo.admit([(u, rng.choice(["c1", "c2"])) for u in picked], session=session)
    elif action == "run" and holding:
        uid = rng.choice(holding)
        session.execute(
            sa.text("UPDATE resource_bindings SET phase = 'Running' WHERE job_uid = :u"), {"u": uid}
        )
    elif action == "report" and holding:
        uid = rng.choice(holding)
        session.execute(
            sa.text("UPDATE jobs SET placements = CAST(:p AS jsonb) WHERE uid = :u"),
            {"u": uid, "p": f'[{{"pod": "{uid}-main-0", "task": "main", "node": "n{rng.randint(0, 1)}"}}]'},
        )
    elif action == "finish" and holding:
        session.execute(
            # As every writer that finishes a binding does: the change scan finds it by that time.
            sa.text(
                "UPDATE resource_bindings SET phase = 'Succeeded', finished_at = now() WHERE job_uid = :u"
            ),
            {"u": rng.choice(holding)},
        )
    elif action == "requeue" and holding:
        until = clusters_repo.db_now(session=session) + rng.choice([-10.0, 3600.0])
        bindings_repo.requeue(
            [rng.choice(holding)], session=session, kind=WaitKind.Drained, reason="test", exclude_until=until
        )
    elif action == "reason" and suspended:
        bindings_repo.set_reasons([(rng.choice(suspended), "NoFit", f"reason {k}")], session=session)
    elif action == "heartbeat":
        node = rng.choice(NODE_NAMES)
        clusters_repo.heartbeat(
            rng.choice(["c1", "c2"]), {node: {"cpu": rng.randint(0, 64) * 1000}}, session=session
        )
    elif action == "inventory":  # an agent registers again with a changed node
        cpu = rng.randint(32, 128) * 1000
        nodes = [{"name": n, "allocatable": {"cpu": cpu, "memory": 2**38}} for n in NODE_NAMES]
        clusters_repo.register(
            rng.choice(["c1", "c2"]), session=session, labels={}, nodes=nodes, free={"n0": {"cpu": cpu}}
        )
    elif action == "delete":
        jobs_repo.delete_job(rng.choice(uids)[0], session=session)
    return action


def test_reads_of_changes_build_the_same_snapshot_as_full_reads(engine: sa.Engine, monkeypatch: Any) -> None:
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        for name in ("c1", "c2"):
            clusters_repo.register(
                name, session=session, labels={}, nodes=NODES, free={n: {"cpu": 64000} for n in NODE_NAMES}
            )
    rng = random.Random(11)
    kept = SnapshotReader()
    full_reads = count_full_reads(monkeypatch)
    actions: list[str] = []
    rounds = 150
    seen_pending = seen_running = 0
    late: live_repo.Written | None = None  # own reasons the cache takes in after its next read
    kept_tuples = 0  # queues handed the same tuple as the read before (their jobs unchanged)
    before: dict[str, tuple[object, ...]] = {}
    for k in range(rounds):
        with session_scope(sessions) as session:
            actions += [step(session, rng, f"{k}-{i}") for i in range(rng.randint(0, 3))]
        incremental = snapshot_of(sessions, kept)
        now = dict(kept.jobs.pending_by_queue().by_queue)
        kept_tuples += sum(1 for q, t in now.items() if before.get(q) is t)
        before = now
        assert incremental == snapshot_of(sessions, SnapshotReader()), f"after round {k}"
        if late is not None:
            kept.jobs.knows(late)
            late = None
        seen_pending += len(incremental["pending"])
        seen_running += len(incremental["running"])
        waiting = [p[0] for p in incremental["pending"]]
        if waiting and rng.random() < 0.5:  # the cycle writes why jobs wait, as the dispatcher does
            picked = rng.sample(waiting, min(len(waiting), rng.randint(1, 4)))
            if rng.random() < 0.5:  # ... after another writer changed one of them since the read
                with session_scope(sessions) as session:
                    exclude(session, picked[0])
                actions.append("changed before own reasons")
            if rng.random() < 0.5:
                written = own_reasons(sessions, [(u, f"own reason {k}") for u in picked])
                if rng.random() < 0.5:
                    kept.jobs.knows(written)
                    actions.append("own reasons")
                else:  # taken in after the next read, as the hub's background explanation is
                    late = written
                    actions.append("own reasons taken in late")
                    if rng.random() < 0.5:  # ... and another writer changed one of them since
                        with session_scope(sessions) as session:
                            exclude(session, picked[-1])
                        actions.append("changed after own reasons")
            else:
                own_admissions(sessions, kept, [(u, rng.choice(["c1", "c2"])) for u in picked])
                actions.append("own admissions")
    # Every kind of change happened, and the kept cache read everything only at its first read
    # and after a deletion (the one change that leaves no row behind).
    assert set(actions) == {
        *KINDS,
        "own reasons",
        "own reasons taken in late",
        "own admissions",
        "changed before own reasons",
        "changed after own reasons",
    }
    assert len(full_reads) - rounds <= 1 + actions.count("delete")
    assert len(full_reads) - rounds < rounds // 3
    assert seen_pending and seen_running  # the snapshots compared were not empty
    assert kept_tuples  # an unchanged queue's tuple was handed in again


def read_once(engine: sa.Engine, *uids: str) -> tuple[Any, SnapshotReader]:
    """These jobs submitted, and a cache that has read them once."""
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        for uid in uids:
            jobs_repo.insert_job(new_job(uid, 1000), session=session)
    kept = SnapshotReader()
    snapshot_of(sessions, kept)
    return sessions, kept


def test_a_write_committed_after_a_read_began_is_not_missed(engine: sa.Engine) -> None:
    """A transaction that started before a read and commits after it is still found by the next
    read, even when a later transaction committed before that read."""
    sessions, kept = read_once(engine, "slow", "fast")
    with sessions() as slow:
        bindings_repo.admit([("slow", "c1")], session=slow)  # written, not yet committed
        with session_scope(sessions) as fast:
            bindings_repo.admit([("fast", "c1")], session=fast)
        seen = snapshot_of(sessions, kept)
        assert [p[0] for p in seen["pending"]] == ["slow"]
        slow.commit()
    assert snapshot_of(sessions, kept)["pending"] == []
    assert sorted(kept.jobs.running) == ["fast", "slow"]


def test_a_deleted_job_is_dropped(engine: sa.Engine, monkeypatch: Any) -> None:
    sessions, kept = read_once(engine, "a", "b")
    with session_scope(sessions) as session:
        jobs_repo.delete_job("a", session=session)
    full = count_full_reads(monkeypatch)
    assert [p[0] for p in snapshot_of(sessions, kept)["pending"]] == ["b"]
    assert full == [1]  # a deletion leaves no row to find: the count told, and it read them all
    assert snapshot_of(sessions, kept)["pending"] == snapshot_of(sessions, SnapshotReader())["pending"]
    assert full == [1, 1]


def next_read(sessions: Any, kept: SnapshotReader) -> set[str]:
    """The jobs whose bindings the kept cache's next read fetches."""
    with session_scope(sessions) as session:
        assert kept.jobs.horizon is not None
        rows, _ = live_repo.changed_since(
            kept.jobs.horizon, session=session, skip=sorted(kept.jobs.own_writes)
        )
    return {b.job_uid for b in rows}


def test_own_reason_writes_are_not_read_again_unless_another_writer_changed_them(engine: sa.Engine) -> None:
    sessions, kept = read_once(engine, "a", "b", "c")
    # Taken in at once, or after the next read (as the hub's background explanation is).
    kept.jobs.knows(own_reasons(sessions, [("a", "reason a"), ("b", "reason b")]))
    assert not {"a", "b"} & next_read(sessions, kept)
    snapshot_of(sessions, kept)
    written = own_reasons(sessions, [("a", "reason a2"), ("b", "reason b2")])
    snapshot_of(sessions, kept)  # reads them: they were not taken in yet
    kept.jobs.knows(written)
    assert not {"a", "b"} & next_read(sessions, kept)
    snapshot_of(sessions, kept)
    # Another writer's change before the cache's own write, or after it but before the next read:
    # the rows the cache holds differ from those written, so they are read again.
    with session_scope(sessions) as session:
        exclude(session, "a")
    kept.jobs.knows(own_reasons(sessions, [("a", "reason a3"), ("b", "reason b3")]))
    assert {"a", "b"} <= next_read(sessions, kept)
    seen = snapshot_of(sessions, kept)
    assert [(p[0], p[2]) for p in seen["pending"]] == [("a", ["c1"]), ("b", []), ("c", [])]
    written = own_reasons(sessions, [("b", "reason b4"), ("c", "reason c4")])
    with session_scope(sessions) as session:
        exclude(session, "b")
    snapshot_of(sessions, kept)  # reads both, b with the other writer's change
    kept.jobs.knows(written)  # ... which the rows as written lack: the cache keeps what it read
    assert [(p[0], p[2]) for p in snapshot_of(sessions, kept)["pending"]] == [
        ("a", ["c1"]),
        ("b", ["c1"]),
        ("c", []),
    ]
    assert snapshot_of(sessions, kept) == snapshot_of(sessions, SnapshotReader())
    with session_scope(sessions) as session:  # a write after one's own gives the row a new version
        exclude(session, "c")
    kept.jobs.knows(own_reasons(sessions, [("a", "reason a5")]))
    assert "c" in next_read(sessions, kept)
    assert [(p[0], p[2]) for p in snapshot_of(sessions, kept)["pending"]] == [
        ("a", ["c1"]),
        ("b", ["c1"]),
        ("c", ["c1"]),
    ]
