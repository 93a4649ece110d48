"""Test harness: real processes on loopback (a hub on a fresh database, agents, the CLI)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from vglobal.api.v1 import agent_pb2, agent_pb2_grpc
from vglobal.client import Client
from vglobal.dial import Dial

FAST = ["--dispatch-interval", "200ms", "--heartbeat-interval", "500ms"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sim_cluster(name: str, nodes: int, gpus: int = 8, cpu: str = "64", region: str = "east") -> str:
    return f"""
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {{name: {name}, labels: {{region: {region}}}}}
spec:
  nodeGroups:
  - name: {name}
    count: {nodes}
    allocatable: {{cpu: "{cpu}", memory: 256Gi, pods: "110", nvidia.com/gpu: "{gpus}"}}
"""


@dataclass
class System:
    tmp: Path
    database_url: str
    target: str = ""
    hub_args: list[str] = field(default_factory=list)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def _spawn(
        self, name: str, args: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = (self.tmp / f"{name}.log").open("ab")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        p = subprocess.Popen(
            [sys.executable, "-m", "vglobal", *args], stdout=log, stderr=subprocess.STDOUT, env=env
        )
        self.procs[name] = p
        return p

    def start_hub(self, *extra: str, name: str = "hub", ca_file: Path | None = None) -> None:
        """A hub on loopback; with ``ca_file`` its health is asked over TLS (give --tls-* in ``extra``)."""
        if not self.target:
            self.target = f"127.0.0.1:{free_port()}"
        self.hub_args = list(extra)
        self._spawn(
            name, ["hub", "--listen", self.target, "--database-url", self.database_url, *FAST, *extra]
        )
        self.wait_healthy(ca_file=ca_file, name=name)

    def wait_healthy(
        self, timeout: float = 180.0, ca_file: Path | None = None, name: str = "hub"
    ) -> None:
        # Generous: a loaded machine can take a minute to import and migrate; a hub that died is
        # reported at once instead.
        deadline = time.monotonic() + timeout
        hub = self.procs.get(name)
        with Dial(self.target, ca_file=ca_file).channel() as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            while time.monotonic() < deadline:
                if hub is not None and hub.poll() is not None:
                    raise AssertionError(f"hub exited with {hub.returncode}; log:\n{self.log(name)}")
                try:
                    resp = stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                    if resp.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                time.sleep(0.2)
        raise AssertionError(f"hub not healthy; log:\n{self.log('hub')}")

    def start_agent(self, name: str, spec: str, *extra: str, dial_args: list[str] | None = None) -> Path:
        """An agent process; ``dial_args`` (global options such as --hub, --ca-file, --cert) replace
        the plain ``--hub TARGET``."""
        path = self.tmp / f"{name}.yaml"
        path.write_text(spec)
        self._spawn(
            f"agent-{name}",
            [*(dial_args or ["--hub", self.target]), "agent", "--sim", str(path), "--heartbeat-interval", "500ms",
             *extra],
        )  # fmt: skip
        return path

    def start_kube_agent(
        self, name: str, kubeconfig: Path, *extra: str, env: dict[str, str] | None = None, hub: str = ""
    ) -> None:
        """An agent with the kube backend; global flags after the subcommand, as a user may write them
        (``hub``: another address than the hub's own, a proxy's say)."""
        self._spawn(
            f"agent-{name}",
            [
                "agent",
                "--kubeconfig",
                str(kubeconfig),
                "--hub",
                hub or self.target,
                "--heartbeat-interval",
                "500ms",
                *extra,
            ],
            env,
        )

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [sys.executable, "-m", "vglobal", "--hub", self.target, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and res.returncode != 0:
            raise AssertionError(f"vglobal {' '.join(args)} failed ({res.returncode}): {res.stderr}")
        return res

    def get_json(self, kind: str) -> list[dict[str, Any]]:
        """`vglobal get KIND -o json`, the command run in this process: tests poll it, and a process
        per poll costs a second of CPU for its imports, which on two cores slows every other test."""
        from click.testing import CliRunner

        from vglobal.cli.main import cli

        res = CliRunner().invoke(cli, ["--hub", self.target, "get", kind, "-o", "json"])
        if res.exit_code != 0:
            raise AssertionError(f"vglobal get {kind} failed ({res.exit_code}): {res.output} {res.exception!r}")
        out: list[dict[str, Any]] = json.loads(res.stdout)
        return out

    def apply_text(self, name: str, text: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`vglobal apply -f` of YAML text, written to ``<tmp>/<name>.yaml`` first."""
        path = self.tmp / f"{name}.yaml"
        path.write_text(text)
        return self.cli("apply", "-f", str(path), check=check)

    def job(self, name: str) -> dict[str, Any]:
        """The job as `get jobs -o json` shows it ({} while there is none of that name)."""
        return next((j for j in self.get_json("jobs") if j["name"] == name), {})

    def client(self, timeout: float = 10) -> Client:
        return Client(self.target, timeout=timeout)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        self.procs[name].send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            self.procs[name].wait(timeout=30)

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace")[-6000:] if path.exists() else ""

    def whole_log(self, name: str) -> str:
        """All of a process's log so far (agents log each run they start and stop)."""
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(f"===== {n}\n{self.log(n)}" for n in self.procs)

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.terminate()
                except ProcessLookupError:
                    pass
        for p in self.procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


def wait_for(cond: Callable[[], Any], timeout: float, what: str, system: System | None = None) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(0.25)
    detail = f"\n{system.logs()}" if system is not None else ""
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last={last!r}{detail}")


@contextlib.contextmanager
def idle_agent_streams(target: str, n: int, hold: float) -> Iterator[list[Any]]:
    """``n`` AgentService.Connect calls (on 20 channels) that send nothing, not even Register, for
    up to ``hold`` seconds; yields the calls (``call.done()`` once the hub ends one)."""
    channels = [grpc.insecure_channel(target) for _ in range(20)]
    release = threading.Event()

    def silent() -> Iterator[agent_pb2.AgentMessage]:
        release.wait(hold)
        yield from ()

    calls = [agent_pb2_grpc.AgentServiceStub(channels[i % 20]).Connect(silent()) for i in range(n)]
    try:
        yield calls
    finally:
        release.set()
        for call in calls:
            call.cancel()
        for ch in channels:
            ch.close()
