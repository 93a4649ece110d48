"""After ``vglobal cancel``, ``describe job`` shows the pods as the cluster last reported them, and
marks them Terminated once the agent confirms it stopped the run."""

from __future__ import annotations

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for

pytestmark = pytest.mark.e2e

LONG = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: long
  annotations: {vglobal.io/sim-duration: 1h}
spec:
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def _sections(out: str) -> tuple[str, list[str], list[str]]:
    """describe's Pods heading, its pod lines and its event lines."""
    head, _, events = out.partition("\nEvents:\n")
    _, _, pods = head.partition("\nPods (")
    heading, *lines = pods.splitlines()
    return "Pods (" + heading, [line.split() for line in lines], events.splitlines()


def test_cancel_shows_the_pods_terminated_once_the_agent_confirms(system: System) -> None:
    system.start_hub()
    system.start_agent("east", sim_cluster("east", nodes=2))
    wait_for(lambda: len(system.get_json("clusters")) == 1, 30, "east registered", system)
    path = system.tmp / "long.yaml"
    path.write_text(LONG)
    system.cli("apply", "-f", str(path))

    def running() -> str | None:
        out = system.cli("describe", "job", "long").stdout
        if "\nPods (" not in out:
            return None
        _, pods, _ = _sections(out)
        return out if len(pods) == 2 and all(p[-1] == "Running" for p in pods) else None

    heading, before, _ = _sections(wait_for(running, 60, "both pods Running", system))
    assert heading == "Pods (as cluster east last reported):"
    nodes = {p[0]: p[2] for p in before}

    system.cli("cancel", "job", "long")
    # The agent's confirmation is an event that stays: wait for it, then read what describe shows.
    out = wait_for(
        lambda: (o := system.cli("describe", "job", "long").stdout) and " Stopped " in o and o,
        60,
        "the agent to confirm the cancel",
        system,
    )
    heading, after, events = _sections(out)
    assert heading == "Pods (as cluster east last reported):", out
    assert {p[0]: p[2] for p in after} == nodes, out  # the same pods, on the nodes they ran on
    assert all(p[-1] == "Terminated" for p in after), out
    stopped = [e for e in events if " Stopped " in e]
    assert len(stopped) == 1 and "generation 1 stopped: 2 pods terminated" in stopped[0], out
    # What the agent said when it stopped them is there too.
    assert any(" JobAborted " in e and "agent/east" in e for e in events), out
    job = next(j for j in system.get_json("jobs") if j["name"] == "long")
    assert job["phase"] == "Aborted" and job["bindingPhase"] == "Aborted"
