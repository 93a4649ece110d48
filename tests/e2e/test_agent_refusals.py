"""An agent the hub refuses says in its log what is wrong and what to check, and backs off; the
hub logs each refused agent with the reason, once per peer and reason a minute, never a token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.harness import System, sim_cluster, wait_for
from tests.e2e.test_security import start_secure
from tests.integration.secure_hub import make_certs

pytestmark = pytest.mark.e2e

WRONG = "not-a-token-4b1d7e"


def messages(system: System, name: str) -> list[str]:
    """The messages of a process's log (its lines are JSON when stderr is not a terminal)."""
    path = system.tmp / f"{name}.log"
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(str(json.loads(line)["message"]))
        except (ValueError, KeyError, TypeError):
            out.append(line)
    return out


def having(system: System, name: str, *words: str) -> list[str]:
    return [m for m in messages(system, name) if all(w in m for w in words)]


def test_refused_agents_are_explained_by_both_sides(system: System, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    agents = start_secure(system, certs)
    # Agents on tokens dial the hub's port; the agents' port takes client certificates only.
    ca = ["--hub", system.target, "--ca-file", str(certs / "ca.crt")]
    wrong = tmp_path / "wrong-token"
    wrong.write_text(WRONG + "\n")
    # A token the hub does not know.
    system.start_agent(
        "gpu-east", sim_cluster("gpu-east", nodes=1), dial_args=[*ca, "--token-file", str(wrong)]
    )
    # A good agent token, bound to gpu-east, for a cluster named gpu-west.
    system.start_agent(
        "gpu-west", sim_cluster("gpu-west", nodes=1), dial_args=[*ca, "--token-file", str(certs / "token-east-token")]
    )  # fmt: skip

    # Without a client certificate at the agents' port, and in plaintext at the TLS port.
    system.start_agent("nocert", sim_cluster("nocert", nodes=1), dial_args=["--hub", agents, "--ca-file",
                       str(certs / "ca.crt")])  # fmt: skip
    system.start_agent("plain", sim_cluster("plain", nodes=1), dial_args=["--hub", system.target])

    # Each agent tries again and again: wait until it has failed three times.
    for name in ("gpu-east", "gpu-west", "nocert", "plain"):
        wait_for(
            lambda n=name: having(system, f"agent-{n}", "attempt 3 failed"), 60, f"{name} refused", system
        )

    east = having(system, "agent-gpu-east", "refused this agent's credentials")
    assert east and all("--token-file" in m and "--auth-config" in m for m in east), east
    assert all("retrying in" in m for m in east), east
    west = having(system, "agent-gpu-west", "does not let this identity speak for cluster", "gpu-west")
    assert west and all("--name" in m and "spiffe://vglobal/cluster/gpu-west" in m for m in west), west
    nocert = having(system, "agent-nocert", "TLS with the hub at", "failed")
    assert nocert and all("--agent-listen" in m and "--cert/--key" in m for m in nocert), nocert
    plain = having(system, "agent-plain", "it serves TLS and this agent dials in plaintext")
    assert plain and all("--ca-file" in m for m in plain), plain
    # Retried (an operator may mend the hub's config), each wait logged and capped.
    waits = [float(m.rsplit("retrying in ", 1)[1].rstrip("s")) for m in east]
    assert all(w <= 30.0 for w in waits), waits

    # The hub says who it refused and why, once per peer and reason however often they retried.
    hub_unknown = having(system, "hub", "refused an agent from 127.0.0.1", "UNAUTHENTICATED", "not known")
    hub_denied = having(system, "hub", "refused an agent from 127.0.0.1", "PERMISSION_DENIED", "gpu-west")
    assert len(hub_unknown) == 1, messages(system, "hub")
    assert len(hub_denied) == 1, messages(system, "hub")
    secret = (certs / "token-east-token").read_text().strip()
    for name in ("hub", "agent-gpu-east", "agent-gpu-west"):
        text = "\n".join(messages(system, name))
        assert WRONG not in text and secret not in text, name
