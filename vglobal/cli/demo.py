"""`vglobal demo`: a hub with embedded Postgres, an agent per simulated cluster, the examples, a live view.

Secure as a real installation: TLS everywhere, each agent with its cluster's client certificate and
the user with a bearer token (all made by `vglobal certs init` in the data directory). On a terminal
it stays up until Ctrl-C (the CronJob in the examples keeps making jobs); in a pipe or a log, or with
``--exit-when-done``, it ends once every example has run to its end.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

import click
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rich.console import Console, ConsoleRenderable, Group
from rich.live import Live
from rich.text import Text

from vglobal.cli.certs import UserSpec, init_certs
from vglobal.cli.interrupt import interruptible
from vglobal.cli.output import plain_table, table
from vglobal.dial import Dial
from vglobal.model.kinds import KINDS
from vglobal.sdk import Client, VGlobalError
from vglobal.sdk.rows import cluster_row, cronjob_row, job_row, jobflow_row, queue_row

FINISHED = {"Completed", "Failed", "Aborted", "Terminated"}
FLOW_FINAL = {"Succeed", "Failed"}
# A long-running kind (Deployment, RayCluster, ...) has run to its end once it is up.
UP = {k.shown for k in KINDS if k.long_running}


def at_end(row: dict[str, Any]) -> bool:
    return row["phase"] in FINISHED or (row["kind"] in UP and row["phase"] == "Running")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(dial: Dial, timeout: float) -> None:
    target = dial.target
    deadline = time.monotonic() + timeout
    with dial.channel() as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        while time.monotonic() < deadline:
            try:
                if (
                    stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0).status
                    == health_pb2.HealthCheckResponse.SERVING
                ):
                    return
            except grpc.RpcError:
                time.sleep(0.2)
    raise click.ClickException(f"the hub at {target} did not become healthy within {timeout:.0f}s")


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()


def port_or_free(port: int) -> int:
    """``port`` when nothing listens on it on loopback, else any free port."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return free_port()
    return port


def cluster_names(clusters_dir: Path) -> dict[Path, str]:
    from vglobal.agent.daemon import load_sim_cluster

    return {f: load_sim_cluster(f).name for f in sorted(clusters_dir.glob("*.yaml"))}


@click.command()
@click.option(
    "--clusters",
    "clusters_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("clusters"),
    show_default=True,
)
@click.option(
    "--examples",
    "examples_dir",
    type=click.Path(exists=True, path_type=Path),
    default=Path("examples"),
    show_default=True,
)
@click.option("--data-dir", type=click.Path(path_type=Path), default=None, help="Keep the database here.")
@click.option(
    "--timeout",
    default=600.0,
    show_default=True,
    help="When it ends by itself: give up if the examples have not all run by then.",
)
@click.option(
    "--dashboard-port", default=8080, show_default=True, help="The web dashboard's port (another if busy)."
)
@click.option(
    "--exit-when-done",
    is_flag=True,
    help="Stop once every example has run to its end (always so when stdout is not a terminal).",
)
def demo(
    clusters_dir: Path,
    examples_dir: Path,
    data_dir: Path | None,
    timeout: float,
    dashboard_port: int,
    exit_when_done: bool,
) -> None:
    """Run the whole system locally: on a terminal until Ctrl-C, else until the examples have run."""
    console = Console(soft_wrap=True)  # a line in a log is never folded at 80 columns
    stay = console.is_terminal and not exit_when_done
    tmp = None
    if data_dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="vglobal-demo-"))
        data_dir = tmp
    port, agent_port = free_port(), free_port()
    certs = data_dir / "certs"
    clusters = cluster_names(clusters_dir)
    init_certs(certs, "localhost", sorted(set(clusters.values())), [UserSpec.parse("demo:admin")], days=30)
    token = (certs / "token-demo").read_text().strip()
    keys = certs / "secret.keys"  # seals the Secrets jobs use; kept with the data directory
    if not keys.exists():
        from vglobal.hub.secret_box import generate_key

        keys.write_text(generate_key() + "\n")
        keys.chmod(0o600)
    user = Dial(f"127.0.0.1:{port}", ca_file=certs / "ca.crt", token=token)
    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    exe = [sys.executable, "-m", "vglobal"]

    def spawn(name: str, args: list[str]) -> None:
        out = (logs / f"{name}.log").open("wb")
        # A group of its own: Ctrl-C reaches only the demo, which stops them in order.
        procs.append(
            subprocess.Popen([*exe, *args], stdout=out, stderr=subprocess.STDOUT, process_group=0)
        )

    interruptible()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        console.print(f"starting the hub on {user.target} with TLS (embedded PostgreSQL in {data_dir})")
        spawn("hub", [
            "hub", "--listen", user.target, "--data-dir", str(data_dir / "hub"), "--heartbeat-interval", "1s",
            "--tls-cert", str(certs / "hub.crt"), "--tls-key", str(certs / "hub.key"),
            "--client-ca", str(certs / "ca.crt"), "--agent-listen", f"127.0.0.1:{agent_port}",
            "--auth-config", str(certs / "auth.yaml"), "--secret-keys-file", str(keys),
        ])  # fmt: skip
        wait_healthy(user, 90)
        for f, name in clusters.items():
            console.print(f"starting an agent for {f} (client certificate of cluster {name})")
            spawn(f"agent-{f.stem}", [
                "--hub", f"127.0.0.1:{agent_port}", "--ca-file", str(certs / "ca.crt"),
                "--cert", str(certs / f"agent-{name}.crt"), "--key", str(certs / f"agent-{name}.key"),
                "agent", "--sim", str(f), "--heartbeat-interval", "1s",
            ])  # fmt: skip
        web = f"127.0.0.1:{port_or_free(dashboard_port)}"
        ca = str(certs / "ca.crt")
        spawn("dashboard", ["--hub", user.target, "--ca-file", ca, "dashboard", "--listen", web])
        show_token(console, user, certs, web)
        run_examples(user, exe, certs, examples_dir, len(clusters), console, timeout, stay)
        console.print(f"logs are in {logs}" if tmp is None else "done; stopping everything")
    except KeyboardInterrupt:
        console.print("\nCtrl-C: stopping the hub, the agents and the dashboard")
        if tmp is None:
            console.print(f"logs are in {logs}")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        stop_all(procs)
        signal.signal(signal.SIGTERM, previous)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _interrupt(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt


def show_token(console: Console, user: Dial, certs: Path, web: str) -> None:
    console.print("\n[bold]Use this hub from another shell while the demo runs:[/bold]", highlight=False)
    console.print(
        f"  export VGLOBAL_HUB={user.target}\n"
        f"  export VGLOBAL_CA_FILE={certs / 'ca.crt'}\n"
        f"  export VGLOBAL_TOKEN={user.token}\n"
        "  vglobal get jobs\n",
        highlight=False,
        soft_wrap=True,
    )
    console.print(
        f"[bold]The dashboard:[/bold] http://{web}/ — log in with the token above "
        f"(also in {certs / 'token-demo'}).\n",
        highlight=False,
        soft_wrap=True,
    )


def run_examples(
    user: Dial,
    exe: list[str],
    certs: Path,
    examples: Path,
    clusters: int,
    console: Console,
    timeout: float,
    stay: bool,
) -> None:
    with Client(dial=user) as client:
        deadline = time.monotonic() + 60
        while len(client.list_clusters()) < clusters and time.monotonic() < deadline:
            time.sleep(0.3)
        console.print(f"applying {examples}")
        result = subprocess.run(
            [*exe, "--hub", user.target, "--ca-file", str(certs / "ca.crt"),
             "--token-file", str(certs / "token-demo"), "apply", "-f", str(examples)],
            check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise click.ClickException("applying the examples failed")
        if stay:
            console.print("[bold]Ctrl-C stops the demo.[/bold]\n", highlight=False)
            live_view(client, console)
        else:
            console.file.write(frame_text(wait_for_the_end(client, timeout)))


Frame = tuple[str, list[tuple[str, str, list[dict[str, Any]]]]]


def read_frame(client: Client, started: float, stay: bool) -> tuple[Frame, bool]:
    """The view's title and tables, and whether every example has run to its end."""
    jobs = [job_row(j) for j in client.list_jobs()]
    flows = [jobflow_row(f) for f in client.list_job_flows()]
    tables = [
        ("Clusters", "clusters", [cluster_row(c) for c in client.list_clusters()]),
        ("Queues", "queues", [queue_row(q) for q in client.list_queues()]),
    ]
    for title, kind, rows in (
        ("CronJobs", "cronjobs", [cronjob_row(c) for c in client.list_cron_jobs()]),
        ("JobFlows", "jobflows", flows),
    ):
        if rows:
            tables.append((title, kind, rows))
    tables.append(("Jobs", "jobs", jobs))
    done = sum(1 for j in jobs if at_end(j))
    # A CronJob never finishes: the examples have run once their Jobs and JobFlows have.
    ended = bool(jobs) and done == len(jobs) and all(f["phase"] in FLOW_FINAL for f in flows)
    title = f"vglobal demo — {time.monotonic() - started:5.1f}s — {done}/{len(jobs)} jobs finished or up"
    if stay:
        title += " — Ctrl-C stops it" + (" (the CronJob keeps making jobs)" if ended else "")
    return (title, tables), ended


def wait_for_the_end(client: Client, timeout: float) -> Frame:
    """Off a terminal: the last frame, once every example has run to its end."""
    started = time.monotonic()
    while True:
        try:
            view, ended = read_frame(client, started, stay=False)
        except VGlobalError:
            ended = False
        else:
            if ended:
                return view
        if time.monotonic() - started > timeout:
            raise click.ClickException(f"jobs still running after {timeout:.0f}s")
        time.sleep(0.5)


def frame_text(view: Frame) -> str:
    """A frame as plain text, each table as wide as its cells (never cut to a log's 80 columns)."""
    title, tables = view
    body = "".join(f"\n{name}\n{plain_table(kind, rows, wide=False)}" for name, kind, rows in tables)
    return f"{title}\n{body}\n"


def live_view(client: Client, console: Console) -> None:
    """On a terminal: the view, redrawn until Ctrl-C."""
    started = time.monotonic()
    with Live(console=console, refresh_per_second=4) as live:
        while True:
            try:
                (title, tables), _ = read_frame(client, started, stay=True)
            except VGlobalError as exc:
                live.update(Text(f"hub unavailable: {exc}"))
                time.sleep(1)
                continue
            parts: list[ConsoleRenderable] = [Text(title, style="bold")]
            for name, kind, rows in tables:
                parts += [Text(f"\n{name}", style="bold cyan"), table(kind, rows, wide=False)]
            live.update(Group(*parts))
            time.sleep(0.5)
