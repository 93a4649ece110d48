"""`vglobal demo` (what `make demo` runs) as a user runs it: a hub, an agent per cluster, the examples
applied, and a live view that ends once every Job and JobFlow has, printing its last frame."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.streams import WIDE

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _examples(kind: str) -> list[str]:
    return [
        doc["metadata"]["name"]
        for path in sorted((ROOT / "examples").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == kind
    ]


def _section(out: str, title: str) -> list[str]:
    """The rows of the table under ``title`` in the last frame (up to the blank line after it)."""
    lines = out.splitlines()
    at = max(i for i, line in enumerate(lines) if line.strip() == title)
    rows = []
    for line in lines[at + 2 :]:
        if not line.strip():
            break
        rows.append(line)
    return rows


@pytest.mark.timeout(900)
def test_the_demo_runs_the_examples_to_the_end_and_prints_them(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "vglobal", "demo", "--data-dir", str(tmp_path), "--timeout", "600"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **WIDE},
        timeout=800,
        check=False,
    )
    out = res.stdout
    assert res.returncode == 0, out + res.stderr
    assert "\ndone" in out or "logs are in" in out, "the view ended on its own, then the processes stopped"
    finished = re.findall(r"vglobal demo — +[\d.]+s — (\d+)/(\d+) jobs finished", out)
    assert finished and finished[-1][0] == finished[-1][1], finished
    jobs = {row.split()[1]: row.split() for row in _section(out, "Jobs")}
    for name in _examples("Job"):
        assert name in jobs and "Completed" in jobs[name], (name, out)
    flows = {row.split()[1]: row.split() for row in _section(out, "JobFlows")}
    for name in _examples("JobFlow"):
        row = flows[name]
        done, steps = row[3].split("/")
        assert row[2] == "Succeed" and done == steps, row
        assert sum(1 for job in jobs if job.startswith(f"{name}-")) == int(steps)
    crons = {row.split()[1] for row in _section(out, "CronJobs")}
    assert crons == set(_examples("CronJob"))
    assert {row.split()[0] for row in _section(out, "Clusters")} == {
        yaml.safe_load(p.read_text())["metadata"]["name"] for p in (ROOT / "clusters").glob("*.yaml")
    }
