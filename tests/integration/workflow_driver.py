"""For tests of CronJobs and JobFlows: a clock the test moves, and a scripted cluster that runs the
Jobs the hub dispatches to it and finishes each as the test says."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import sqlalchemy as sa

from tests.integration.agent_driver import ScriptedAgent
from tests.integration.polling import wait
from vglobal.config import HubSettings
from vglobal.hub.notify import WORKFLOWS
from vglobal.hub.server import Hub


class FakeClock:
    """The hub's clock, set by the test (backwards too)."""

    def __init__(self, start: datetime) -> None:
        self._now = start.timestamp()
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when.timestamp()


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


@contextmanager
def clock_hub(database_url: str, start: datetime) -> Iterator[tuple[Hub, FakeClock]]:
    clock = FakeClock(start)
    hub = Hub(
        HubSettings(listen="127.0.0.1:0", database_url=database_url, dispatch_interval=0.2), clock=clock
    )
    hub.start()
    try:
        yield hub, clock
    finally:
        hub.shutdown()


def looked_at(engine: sa.Engine, name: str) -> float:
    """The hub-clock time of the leader's last look at the CronJob ``name``."""
    with engine.connect() as conn:
        got = conn.execute(
            sa.text("SELECT status->>'lookedAt' FROM cron_jobs WHERE name = :n"), {"n": name}
        ).scalar()
    return float(got or 0)


def tick(hub: Hub, clock: FakeClock, engine: sa.Engine, when: datetime, cron: str) -> None:
    """Move the clock to ``when`` and return once the leader has looked at ``cron`` at that time."""
    clock.set(when)
    hub.ctx.wakeups.fire(WORKFLOWS)
    wait(lambda: looked_at(engine, cron) == when.timestamp(), what=f"a look at cronjob {cron} at {when}")


class Cluster:
    """A scripted member cluster: it accepts what the hub dispatches and finishes it on demand."""

    def __init__(self, hub: Hub, name: str = "east") -> None:
        self.agent = ScriptedAgent(f"127.0.0.1:{hub.port}", name)
        self.runs: dict[str, tuple[str, int]] = {}  # job name -> (uid, generation)

    def __enter__(self) -> Cluster:
        self.agent.connect()
        return self

    def __exit__(self, *_: object) -> None:
        self.agent.close()

    def dispatched(self, name: str, timeout: float = 10.0) -> tuple[str, int]:
        """The run of ``name`` the hub sent here (accepted and reported Running at once)."""
        while name not in self.runs:
            d = self.agent.expect("dispatch", timeout=timeout).dispatch
            job = json.loads(d.manifest)["metadata"]["name"]
            self.runs[job] = (d.job_uid, d.generation)
            self.agent.accept(d.job_uid, d.generation)
            self.agent.status(d.job_uid, d.generation, "Running")
        return self.runs[name]

    def finish(self, name: str, phase: str = "Completed") -> None:
        uid, gen = self.dispatched(name)
        self.agent.status(uid, gen, phase)
