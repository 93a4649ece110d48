"""The ported cases of tests/fixtures/ports/ run through `vglobal sim run` (the hub's admission and the
agents' scheduler on simulated clusters), each checked against its expected.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from vglobal.cli.sim import sim

SCENARIOS = Path(__file__).resolve().parents[3] / "fixtures" / "ports"
TAKEN_EVENTS = {"Preempted", "Reclaimed", "PodEvicted"}


def _run(case: Path) -> dict[str, Any]:
    out = CliRunner().invoke(
        sim, ["run", "--cluster", str(case / "cluster.yaml"), "--jobs", str(case / "jobs.yaml")]
    )
    assert out.exit_code == 0, out.output
    result: dict[str, Any] = json.loads(out.stdout)
    return result


@pytest.mark.parametrize("case", sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir()))
def test_scenario_settles_as_its_source_expects(case: str) -> None:
    want = yaml.safe_load((SCENARIOS / case / "expected.yaml").read_text())
    jobs = {j["name"]: j for j in _run(SCENARIOS / case)["jobs"]}
    phases = {name: j["phase"] for name, j in jobs.items()}
    running, pending = set(want.get("running", [])), set(want.get("pending", []))
    assert running | pending == set(jobs), f"expected.yaml must name every job: {sorted(jobs)}"
    assert {n for n in running if phases[n] != "Running"} == set(), phases
    assert {n for n in pending if phases[n] != "Pending"} == set(), phases
    taken = {n for n, j in jobs.items() if any(e["reason"] in TAKEN_EVENTS for e in j["events"])}
    assert taken == set(want.get("taken", [])), f"taken: {sorted(taken)}"
    evicted = {
        e["message"].split()[1] for j in jobs.values() for e in j["events"] if e["reason"] == "PodEvicted"
    }
    assert evicted == set(want.get("evicted", [])), f"pods evicted: {sorted(evicted)}"
    for name, where in want.get("nodes", {}).items():
        assert sorted(p["node"] for p in jobs[name]["pods"]) == sorted(where)
    for name, count in want.get("running_pods", {}).items():
        assert sum(p["phase"] == "Running" for p in jobs[name]["pods"]) == count, jobs[name]["pods"]


def test_every_scenario_names_its_source() -> None:
    for case in SCENARIOS.iterdir():
        if case.is_dir():
            head = (case / "jobs.yaml").read_text().splitlines()[0]
            assert head.startswith("# ") and any(s in head for s in ("Volcano", "Kueue", "Armada")), case.name
