"""Prometheus metrics scraped over HTTP from a real hub process and a real agent process: the
queues under Volcano's names, completed jobs and CronJob runs on the hub; nodes, GPUs, binds and
cycle times on the agent, which serves only loopback unless told otherwise."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request

import pytest

from tests.e2e.harness import System, free_port, wait_for
from tests.integration.test_cronjobs import cron

pytestmark = pytest.mark.e2e

GPU_CLUSTER = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: east}
spec:
  nodeGroups:
  - name: east
    count: 2
    allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
    gpus: {count: 4, memoryMiB: 40000, model: A100}
"""

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: %(name)s
  annotations: {vglobal.io/sim-duration: %(duration)s}
spec:
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        containers:
        - name: c
          image: x
          resources: {requests: {cpu: "2", memory: 1Gi, volcano.sh/vgpu-number: "1", volcano.sh/vgpu-memory: "10000"}}
"""


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_hub_and_agent_metrics_over_http(system: System) -> None:
    hub_port, agent_port = free_port(), free_port()
    system.start_hub("--metrics-listen", f"127.0.0.1:{hub_port}")
    system.start_agent("east", GPU_CLUSTER, "--metrics-listen", str(agent_port))  # a port alone: loopback
    with system.client() as c:
        wait_for(c.list_clusters, 30, "east to register", system)
        c.submit_job(JOB % {"name": "short", "duration": "1s"})
        c.submit_job(JOB % {"name": "long", "duration": "1h"})
        c.apply_cron_job(cron("nightly"))
        c.create_job_from_cron_job("nightly-by-hand", "nightly")
        wait_for(lambda: c.get_job("short").phase == "Completed", 60, "short to complete", system)
        wait_for(lambda: c.get_job("long").phase == "Running", 60, "long to run", system)

    allocated = 'volcano_queue_allocated_milli_cpu{queue_name="default"}'
    # Held from the first cycle after short finished: long's 2 pods x 2 CPUs, and the CronJob's
    # run (1 CPU) once it is admitted.
    hub = wait_for(
        lambda: (m := scrape(hub_port)).get(allocated) in (4000, 5000) and m, 30, "the queue figures", system
    )
    assert hub['volcano_queue_request_milli_cpu{queue_name="default"}'] >= 4000
    assert hub['volcano_queue_allocated_memory_bytes{queue_name="default"}'] >= 2 * 2**30
    assert 'volcano_queue_deserved_milli_cpu{queue_name="default"}' in hub
    assert 'volcano_queue_share{queue_name="default"}' in hub
    assert hub['volcano_job_completed_phase_count_total{queue_name="default"}'] >= 1
    assert hub['vglobal_cronjob_runs_total{cronjob="nightly",namespace="default"}'] == 1

    def gpu_memory(m: dict[str, float]) -> dict[str, float]:
        return {k: v for k, v in m.items() if k.startswith("vglobal_agent_gpu_memory_allocated_mib")}

    # Held once short's pods are gone (the agent refreshes its figures each second): long's two
    # vGPUs of 10000 MiB, on 2 nodes x 4 GPUs.
    agent = wait_for(
        lambda: sum(gpu_memory(m := scrape(agent_port)).values()) == 20000 and m,
        30,
        "the agent's GPU figures without short's pods",
        system,
    )
    assert len(gpu_memory(agent)) == 8
    assert agent["vglobal_agent_pods_bound_total"] >= 4
    assert agent['vglobal_agent_node_allocatable{node="east-0",resource="cpu"}'] == 32  # cores
    held = sum(agent[f'vglobal_agent_node_allocated{{node="east-{i}",resource="cpu"}}'] for i in range(2))
    assert held >= 4  # cores: long's two pods (and maybe the cron run's)
    assert agent["volcano_e2e_scheduling_latency_milliseconds_count"] >= 1
    assert agent["vglobal_agent_binds_waiting"] == 0
    assert any(re.search(r'model="A100"', k) for k in agent if k.startswith("vglobal_agent_gpu_memory_mib"))


def test_the_agent_refuses_metrics_beyond_loopback_unless_told(system: System, tmp_path: object) -> None:
    system.target = "127.0.0.1:1"  # never reached: the flags are refused first
    spec = system.tmp / "east.yaml"
    spec.write_text(GPU_CLUSTER)
    res = subprocess.run(
        [sys.executable, "-m", "vglobal", "--hub", system.target, "agent", "--sim", str(spec),
         "--metrics-listen", f"0.0.0.0:{free_port()}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode != 0
    assert "--metrics-listen" in res.stderr and "--metrics-public" in res.stderr
