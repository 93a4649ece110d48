"""Chaos during a burst (the short form of bench/chaos.py): 1,000 jobs onto an emulated member
cluster whose agent reaches the hub through a proxy; mid-burst the hub-agent connection stalls and
resumes, then the cluster's API server is killed -9 and comes back on its port with its state. Every
job runs exactly once, by the agent's own log, and ends Completed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.chaos import (
    KUBE_AGENT_FLAGS,
    Burst,
    accepted,
    burst_items,
    completed,
    kube_cluster,
    restart_api_server,
    verdict,
)
from tests.e2e.harness import System, free_port, wait_for
from tests.e2e.stall_proxy import StallProxy

pytestmark = pytest.mark.e2e

JOBS = 1000
STALL = 3.0  # longer than a few heartbeats (500 ms), far shorter than the cluster timeout (30 s)


def test_a_stalled_link_and_a_killed_api_server_mid_burst_lose_nothing_and_run_nothing_twice(
    system: System, tmp_path: Path
) -> None:
    emu = kube_cluster(tmp_path, "kube-a")
    try:
        system.start_hub()
        with StallProxy(f"127.0.0.1:{free_port()}", system.target) as proxy:
            system.start_kube_agent("kube-a", emu.kubeconfig, *KUBE_AGENT_FLAGS, hub=proxy.listen)
            wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "kube-a registered", system)
            items = burst_items(JOBS, duration="2s")
            burst = Burst(system.target, items)
            cluster = ("kube-a",)

            wait_for(lambda: accepted(system, cluster) >= JOBS // 5, 120, "a fifth of the burst started", system)
            proxy.stall()
            stalled_at = accepted(system, cluster)
            time.sleep(STALL)
            proxy.resume()
            assert stalled_at < JOBS, "the burst was over before the stall"

            wait_for(lambda: accepted(system, cluster) >= JOBS // 2, 120, "half of the burst started", system)
            assert completed(system.database_url) < JOBS, "the burst was over before the kill"
            restart_api_server(emu, down=1.0)

            burst.join(120)
            result = verdict(system, cluster, items, burst.started, 180)
        assert result.ok, (result.lost[:10], result.twice[:10], system.log("agent-kube-a"))
    finally:
        emu.stop()
