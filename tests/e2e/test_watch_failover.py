"""Watching through a hub killed -9 mid-burst: one watcher on the killed leader (its SDK reconnects
once the hub is back on its address), one on the other replica (which takes the lead and numbers
what the dead one had committed). Both see every change once, in order, as the database logged it."""

from __future__ import annotations

import signal
import threading

import pytest
import sqlalchemy as sa

from tests.e2e.harness import System, free_port, wait_for
from vglobal.api.v1 import jobs_pb2
from vglobal.client import Client, JobWatch

pytestmark = pytest.mark.e2e

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: %s}
spec:
  tasks:
  - name: t
    replicas: 1
    template: {spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}}
"""


def logged(engine: sa.Engine, after: int) -> list[tuple[int, str, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT revision, kind, name FROM job_changes WHERE revision > :a ORDER BY revision"),
            {"a": after},
        ).all()
    return [(int(r), k, n) for r, k, n in rows]


class Reader:
    def __init__(self, watch: JobWatch) -> None:
        self.watch = watch
        self.events: list[jobs_pb2.JobEvent] = []
        self.error: BaseException | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            self.events.extend(self.watch)
        except BaseException as exc:  # the test reports it
            self.error = exc

    def seen(self) -> list[tuple[int, str, str]]:
        return [(e.revision, jobs_pb2.JobEvent.Type.Name(e.type), e.job.name) for e in self.events]


def test_watchers_lose_nothing_when_the_leading_hub_is_killed(system: System, engine: sa.Engine) -> None:
    system.start_hub()  # the first replica takes the lead
    first = system.target
    system.target = f"127.0.0.1:{free_port()}"
    system.start_hub(name="hub-b")
    second = system.target
    with Client(first, timeout=10) as on_first, Client(second, timeout=10) as on_second:
        _, start = on_second.list_jobs_at()
        readers = [
            Reader(on_first.watch_jobs(from_revision=start)),
            Reader(on_second.watch_jobs(from_revision=start)),
        ]
        for batch in range(6):
            on_second.submit_jobs([(JOB % f"w{batch}-{i:02d}", "") for i in range(50)])
            if batch == 2:
                system.kill("hub", signal.SIGKILL)
        for i in range(0, 50, 5):
            on_second.cancel_job(f"w5-{i:02d}")
        system.target = first
        system.start_hub(name="hub-a2")  # back on its address: the first watcher's SDK reconnects
        # Settled once the log holds every change and nothing is left to number.
        wait_for(
            lambda: sum(1 for _, kind, _ in logged(engine, start) if kind == "ADDED") == 300,
            60,
            "every job logged",
            system,
        )
        with engine.connect() as conn:
            wait_for(
                lambda: (
                    conn.execute(
                        sa.text("SELECT count(*) FROM job_changes WHERE revision IS NULL")
                    ).scalar_one()
                    == 0
                ),
                30,
                "every change numbered",
                system,
            )
        expected = logged(engine, start)
        end = expected[-1][0]
        for r in readers:
            wait_for(
                lambda r=r: r.events and r.events[-1].revision >= end, 60, "the watcher caught up", system
            )
            assert r.error is None
            got = [e for e in r.seen() if e[0] <= end]
            assert got == expected  # every change once, in order, as logged
        assert [rev for rev, _, _ in expected] == list(range(start + 1, end + 1))
        for r in readers:
            r.watch.close()
