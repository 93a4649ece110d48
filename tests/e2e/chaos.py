"""Bursts of jobs with a component failing mid-way, and the exactly-once check, shared by the e2e
tests and bench/chaos.py: a submitter that sends again what it was not told was stored (same
request ids), an emulated member cluster that keeps its objects across a kill (``--state``), and
the verdict read from the agents' own logs of the runs they started."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from tests.e2e.harness import System, wait_for
from tests.e2e.test_hub_replicas import _ACCEPT, runs_started
from tests.kubeapi import EmulatorProcess
from vglobal.client import Client, VGlobalError

BATCH = 500
MANIFEST = (
    '{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","metadata":{"name":"%s",'
    '"annotations":{"vglobal.io/sim-duration":"%s"}},"spec":{"minAvailable":1,"tasks":[{"name":"t",'
    '"replicas":1,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"x",'
    '"resources":{"requests":{"cpu":"100m"}}}]}}}]}}'
)


def job_name(request_id: str) -> str:
    prefix, i = request_id.rsplit("-", 1)
    return prefix + i


def burst_items(jobs: int, prefix: str = "b", duration: str = "100ms") -> list[tuple[str, str]]:
    """(manifest, request id) of ``jobs`` one-pod jobs named ``<prefix><i>``."""
    return [(MANIFEST % (f"{prefix}{i}", duration), f"{prefix}-{i}") for i in range(jobs)]


def submit_all(
    target: str, items: list[tuple[str, str]], stored: list[int], errors: list[str], give_up: float = 120
) -> None:
    """Every item in SubmitJobs calls of BATCH; a call that fails is sent again until it is stored
    (``stored`` grows by the count stored so far, ``errors`` by each failure's code)."""
    with Client(target, timeout=20, retries=1) as client:
        for first in range(0, len(items), BATCH):
            deadline = time.monotonic() + give_up
            while True:
                try:
                    client.submit_jobs(items[first : first + BATCH])
                    break
                except VGlobalError as exc:
                    errors.append(exc.code.name)
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            stored.append(min(first + BATCH, len(items)))


@dataclass
class Burst:
    """A submitter thread for ``items`` against ``target``."""

    target: str
    items: list[tuple[str, str]]
    stored: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(
            target=submit_all, args=(self.target, self.items, self.stored, self.errors), daemon=True
        )
        self.thread.start()

    def count(self) -> int:
        return self.stored[-1] if self.stored else 0

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive() and self.count() == len(self.items), (self.stored[-3:], self.errors[-3:])


def runs_in_logs(logs: dict[str, str]) -> dict[str, list[tuple[str, int]]]:
    """Job name -> [(process, generation)] for every run the given agents' logs say they started."""
    out: dict[str, list[tuple[str, int]]] = {}
    for proc, text in logs.items():
        for name, gen in _ACCEPT.findall(text):
            out.setdefault(name, []).append((proc, int(gen)))
    return out


def accepted(system: System, clusters: tuple[str, ...]) -> int:
    """Runs the agents' logs say they started so far."""
    return sum(len(v) for v in runs_started(system, clusters).values())


def completed(database_url: str) -> int:
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT count(*) FROM jobs WHERE phase = 'Completed'")).scalar_one())
    finally:
        engine.dispose()


@dataclass
class Verdict:
    jobs: int
    lost: list[str]  # never started by any agent, or not Completed at the hub
    twice: list[str]  # started more than once (two generations, or twice on one)
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.lost and not self.twice


def verdict(
    system: System,
    clusters: tuple[str, ...],
    items: list[tuple[str, str]],
    started: float,
    timeout: float,
    journal: Path | None = None,
) -> Verdict:
    """Wait until every job of the burst is Completed at the hub (or ``timeout``), then read the
    agents' logs: each job started exactly once, at generation 1. An agent killed and started
    again logs a second start of a run whose pods the first never created: with the cluster's
    ``journal`` (every pod it ever stored), a run counts twice only when its pod was made twice."""
    names = [job_name(r) for _, r in items]
    with contextlib.suppress(AssertionError):  # what is not done by then is counted as lost
        wait_for(lambda: completed(system.database_url) >= len(names), timeout, "every job Completed")
    seconds = time.monotonic() - started
    engine = sa.create_engine(system.database_url)
    try:
        with engine.connect() as conn:
            done = {
                str(n)
                for (n,) in conn.execute(sa.text("SELECT name FROM jobs WHERE phase = 'Completed'")).all()
            }
    finally:
        engine.dispose()
    runs = runs_started(system, clusters)
    made = pods_made(journal) if journal is not None else {}
    lost = [n for n in names if n not in done or n not in runs]
    twice = [
        n
        for n in names
        if any(g != 1 for _, g in runs.get(n, []))
        or (len(made.get(n, ())) > 1 if journal is not None else len(runs.get(n, [])) > 1)
    ]
    return Verdict(len(names), lost, twice, seconds)


def pods_made(journal: Path) -> dict[str, set[str]]:
    """Job name -> the uids of every pod of task ``t`` the cluster stored (its etcd's record; a
    restart of the emulator compacts it to the live objects)."""
    out: dict[str, set[str]] = {}
    with journal.open("rb") as f:
        for line in f:
            head, _, body = line.partition(b"\t")
            if b'"p":"pods"' not in head or b'"d":1' in head:
                continue
            with contextlib.suppress(ValueError):
                meta = json.loads(body)["metadata"]
                out.setdefault(meta["name"].rsplit("-t-", 1)[0], set()).add(meta["uid"])
    return out


def kube_cluster(tmp: Path, name: str, nodes: int = 8) -> EmulatorProcess:
    """An emulated member cluster that keeps its objects in a journal (kill -9 loses nothing acked)."""
    return EmulatorProcess(
        tmp / f"{name}.kubeconfig", "--name", name, "--nodes", str(nodes),
        "--node-allocatable", "cpu=64,memory=256Gi,pods=500", "--no-hypernode-crd",
        "--state", str(tmp / f"{name}.journal"),
    )  # fmt: skip


KUBE_AGENT_FLAGS = ("--lease-duration", "0", "--kube-qps", "0")


def restart_api_server(emu: EmulatorProcess, down: float) -> None:
    """kill -9 of the API server, ``down`` seconds without one, then the same port and state."""
    emu.kill()
    time.sleep(down)
    emu.restart()
