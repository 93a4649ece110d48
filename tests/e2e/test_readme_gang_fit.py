"""The README's walk-through: the three simulated clusters, ``vglobal apply -f examples/``. The hub's
fit and the agents' placement agree, so the 2 x 8-GPU gang goes where two 8-GPU nodes are free and
starts there: dispatched once, never Unschedulable at an agent, never handed back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import System, wait_for

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _events(system: System, name: str) -> list[str]:
    """The Events lines of ``vglobal describe job NAME``."""
    out = system.cli("describe", "job", name).stdout
    return out.split("\nEvents:\n", 1)[1].splitlines()


def _phase(system: System, name: str) -> str:
    job = next((j for j in system.get_json("jobs") if j["name"] == name), None)
    return str(job["bindingPhase"]) if job else ""


def test_llm_pretrain_goes_where_it_fits_with_the_readme_clusters(system: System) -> None:
    system.start_hub()
    files = sorted((ROOT / "clusters").glob("*.yaml"))
    assert [f.stem for f in files] == ["cpu-central", "gpu-east", "gpu-west"]
    for f in files:
        # The run: a gang an agent cannot place within 10 s is handed back to the hub.
        system.start_agent(f.stem, f.read_text(), "--bind-timeout", "10s")
    wait_for(lambda: len(system.get_json("clusters")) == 3, 60, "three clusters registered", system)
    system.cli("apply", "-f", str(ROOT / "examples"))
    # Running, or already done (it runs 12 s): either way it has started at the cluster it went to.
    wait_for(
        lambda: _phase(system, "llm-pretrain") in ("Running", "Succeeded"), 90, "llm-pretrain started", system
    )
    events = _events(system, "llm-pretrain")
    text = "\n".join(events)
    dispatched = [e for e in events if " Dispatched " in e]
    assert len(dispatched) == 1, text
    assert not [e for e in events if " Rejected " in e or " Unschedulable " in e], text
