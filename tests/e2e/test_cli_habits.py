"""kubectl and vcctl habits through the `vglobal` console script against a real hub and simulated
agents: several -f, directories and stdin; uncut tables in pipes; get NAME, -A, -o name;
priorityclasses; -w for queues; job suspend and resume."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cli_run import VGLOBAL, vglobal
from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

LONG = "a-job-named-long-enough-to-be-cut-by-an-80-column-table"


def job(name: str, queue: str = "default", duration: str = "2s", gpus: int = 0) -> str:
    gpu = f', nvidia.com/gpu: "{gpus}"' if gpus else ""
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, annotations: {{vglobal.io/sim-duration: {duration}}}}}
spec:
  queue: {queue}
  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"{gpu}}}}}}}]
"""


QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: %s}
spec: {weight: 1}
"""

PC = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: %s}
value: %d
"""


def cli(system: System, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    res = vglobal("--hub", system.target, *args, stdin=stdin)
    assert res.returncode == 0, f"vglobal {' '.join(args)}: {res.stderr}"
    return res


def job_json(system: System, name: str) -> dict[str, Any]:
    rows = json.loads(cli(system, "get", "job", name, "-o", "json").stdout)
    assert len(rows) == 1
    return dict(rows[0])


def test_apply_takes_several_files_a_directory_and_stdin_and_tables_are_never_cut(
    system: System, tmp_path: Path
) -> None:
    system.start_hub()
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "b-job.yaml").write_text(job(LONG, queue="research-and-development-long-queue-name"))
    (folder / "a-queue.yaml").write_text(QUEUE % "research-and-development-long-queue-name")
    (folder / "notes.txt").write_text("not a manifest")
    (tmp_path / "pc.yaml").write_text(PC % ("batch-low", 10))
    res = cli(
        system,
        "apply",
        "-f",
        str(tmp_path / "pc.yaml"),
        "-f",
        str(folder),
        "-f",
        "-",
        stdin=job("from-stdin"),
    )
    assert "priorityclass.scheduling.k8s.io/batch-low created" in res.stdout
    assert "queue.scheduling.volcano.sh/research-and-development-long-queue-name created" in res.stdout
    assert f"job.batch.volcano.sh/default/{LONG} created" in res.stdout
    assert "job.batch.volcano.sh/default/from-stdin created" in res.stdout

    # Piped, and even with COLUMNS narrow, nothing is cut; -o wide neither.
    for args, env in ((("get", "jobs"), {}), (("get", "jobs", "-o", "wide"), {"COLUMNS": "40"})):
        out = vglobal("--hub", system.target, *args, env=env).stdout
        line = next(x for x in out.splitlines() if LONG in x)
        assert "research-and-development-long-queue-name" in line
        assert "…" not in out
    assert "cpu=" in vglobal("--hub", system.target, "get", "jobs", "-o", "wide").stdout

    # get NAME..., -A, -o name
    assert cli(system, "get", "jobs", "from-stdin", LONG, "-o", "name").stdout.splitlines() == [
        "job.batch.volcano.sh/from-stdin",
        f"job.batch.volcano.sh/{LONG}",
    ]
    assert len(cli(system, "get", "jobs", "-A", "-o", "name").stdout.splitlines()) == 2
    missing = vglobal("--hub", system.target, "get", "job", "from-stdin", "nope")
    assert missing.returncode == 1
    assert "from-stdin" in missing.stdout and 'job "default/nope" not found' in missing.stderr

    # Priority classes: listed, deleted (an audited change), gone.
    assert "batch-low" in cli(system, "get", "priorityclasses").stdout
    assert cli(system, "delete", "priorityclass", "batch-low").stdout.strip() == (
        "priorityclass.scheduling.k8s.io/batch-low deleted"
    )
    assert json.loads(cli(system, "get", "pc", "-o", "json").stdout) == []
    gone = vglobal("--hub", system.target, "delete", "priorityclass", "batch-low")
    assert gone.returncode == 1 and "NOT_FOUND" in gone.stderr
    with system.client() as c:
        events = [e for e in c.explain_job("from-stdin").events]
    assert events  # the jobs are untouched by the class's deletion


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    out: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=read, daemon=True).start()
    return out


def _line_with(lines: queue.Queue[str], text: str, timeout: float = 30) -> str:
    seen = []
    while True:
        line = lines.get(timeout=timeout)  # queue.Empty fails the test
        seen.append(line)
        if text in line:
            return line


def test_get_queues_watch_prints_a_queue_as_it_appears(system: System, tmp_path: Path) -> None:
    system.start_hub()
    proc = subprocess.Popen(
        [VGLOBAL, "--hub", system.target, "get", "queues", "-w"], stdout=subprocess.PIPE, text=True
    )
    try:
        lines = _lines(proc)
        assert _line_with(lines, "NAME").split()[:2] == ["NAME", "PARENT"]
        _line_with(lines, "default")
        cli(system, "apply", "-f", "-", stdin=QUEUE % "watched")
        assert _line_with(lines, "watched").split()[0] == "watched"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_job_suspend_takes_it_off_its_cluster_and_resume_runs_it_again(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=1))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "the cluster registered", system)
    cli(system, "apply", "-f", "-", stdin=job("long", duration="1h", gpus=8))
    first = wait_for(
        lambda: (j := job_json(system, "long"))["phase"] == "Running" and j, 60, "running", system
    )
    assert first["cluster"] == "east" and first["generation"] == 1

    assert (
        cli(system, "job", "suspend", "long").stdout.strip()
        == "job.batch.volcano.sh/default/long suspended (Aborted)"
    )
    held = job_json(system, "long")
    assert (held["phase"], held["bindingPhase"]) == ("Aborted", "Aborted")
    # The agent takes it off: the cluster's GPUs are all free again.
    wait_for(
        lambda: system.get_json("clusters")[0]["free"].get("nvidia.com/gpu") == "8",
        30,
        "the GPUs freed",
        system,
    )
    again = vglobal("--hub", system.target, "job", "suspend", "long")
    assert again.returncode == 1 and "FAILED_PRECONDITION" in again.stderr

    assert (
        cli(system, "job", "resume", "long").stdout.strip()
        == "job.batch.volcano.sh/default/long resumed (Pending)"
    )
    back = wait_for(
        lambda: (j := job_json(system, "long"))["phase"] == "Running" and j, 60, "running again", system
    )
    assert back["cluster"] == "east" and back["generation"] == 2  # a new run, fenced from the old
    twice = vglobal("--hub", system.target, "job", "resume", "long")
    assert twice.returncode == 1 and "only a suspended (Aborted) job can be resumed" in twice.stderr
    with system.client() as c:
        reasons = [e.reason for e in c.explain_job("long").events]
    assert "Suspended" in reasons and "Resumed" in reasons
