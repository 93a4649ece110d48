"""A TLS hub process with agents on their certificates and users with tokens, as the README runs it:
the auth config reloads on SIGHUP, secrets stay out of the log, metrics stay on loopback, and idle
agent streams do not slow the API."""

from __future__ import annotations

import contextlib
import signal
import socket
import urllib.request
from pathlib import Path

import grpc
import psutil
import pytest

from tests.e2e.harness import System, free_port, idle_agent_streams, sim_cluster, wait_for
from tests.integration.secure_hub import make_certs
from vglobal.client import Client, VGlobalError
from vglobal.dial import Dial

pytestmark = pytest.mark.e2e


def start_secure(system: System, certs: Path, *extra: str) -> str:
    agent_port = free_port()
    system.start_hub(
        "--tls-cert", str(certs / "hub.crt"), "--tls-key", str(certs / "hub.key"),
        "--client-ca", str(certs / "ca.crt"), "--agent-listen", f"127.0.0.1:{agent_port}",
        "--auth-config", str(certs / "auth.yaml"), *extra,
        ca_file=certs / "ca.crt",
    )  # fmt: skip
    return f"127.0.0.1:{agent_port}"


def user(system: System, certs: Path, name: str) -> Client:
    token = (certs / f"token-{name}").read_text().strip()
    return Client(dial=Dial(system.target, ca_file=certs / "ca.crt", token=token), timeout=10, retries=1)


def test_the_auth_config_reloads_on_sighup_and_a_bad_one_is_refused(system: System, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    start_secure(system, certs)
    with user(system, certs, "vic") as vic:
        assert vic.list_jobs() == []
        auth = certs / "auth.yaml"
        good = auth.read_text()
        auth.write_text(good.replace("role: viewer", "role: superuser"))
        system.procs["hub"].send_signal(signal.SIGHUP)
        wait_for(lambda: "roleBindings" in system.log("hub") and "kept" in system.log("hub"), 10, "a refusal")
        assert vic.list_jobs() == []  # the old config still holds
        auth.write_text(
            good.replace("subject: vic\n  role: viewer", "subject: vic\n  role: agent\n  clusters: [x]")
        )
        system.procs["hub"].send_signal(signal.SIGHUP)

        def denied() -> bool:
            try:
                vic.list_jobs()
            except VGlobalError as exc:
                return exc.code == grpc.StatusCode.PERMISSION_DENIED
            return False

        wait_for(denied, 10, "the new config to apply", system)


def test_tokens_and_database_passwords_never_reach_the_log(system: System, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    agent_target = start_secure(system, certs, "-v")
    system.start_agent(
        "gpu-east", sim_cluster("gpu-east", 1), "--heartbeat-interval", "500ms",
        dial_args=["--hub", agent_target, "--ca-file", str(certs / "ca.crt"),
                   "--cert", str(certs / "agent-gpu-east.crt"), "--key", str(certs / "agent-gpu-east.key")],
    )  # fmt: skip
    with user(system, certs, "ada") as ada:
        wait_for(ada.list_clusters, 30, "the agent to register", system)
        for name in ("ada", "alice", "vic"):
            with user(system, certs, name) as c, contextlib.suppress(VGlobalError):
                c.list_jobs()
    wrong = Client(system.target, ca_file=certs / "ca.crt", token="wrong-token-123", timeout=5, retries=1)
    with wrong, pytest.raises(VGlobalError):
        wrong.list_jobs()
    log = (system.tmp / "hub.log").read_text(errors="replace")
    password = system.database_url.split("@")[0].rsplit(":", 1)[-1]
    for secret in [(certs / f"token-{n}").read_text().strip() for n in ("ada", "alice", "vic")] + [
        "wrong-token-123"
    ]:
        assert secret not in log
    if password and "//" not in password:
        assert password not in log
    assert "Traceback" not in log


def test_metrics_bind_loopback_unless_told_otherwise(system: System) -> None:
    port = free_port()
    system.start_hub("--metrics-listen", str(port))
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        assert r.status == 200
    outward = [a for a in _addresses() if not a.startswith("127.")]
    if not outward:
        pytest.skip("this machine has no address but loopback")
    with pytest.raises(OSError):
        socket.create_connection((outward[0], port), timeout=2).close()


def _addresses() -> list[str]:
    """This machine's IPv4 addresses."""
    return sorted(
        {a.address for addrs in psutil.net_if_addrs().values() for a in addrs if a.family == socket.AF_INET}
    )


def test_200_idle_agent_streams_do_not_stop_the_api(system: System, monkeypatch: pytest.MonkeyPatch) -> None:
    """Streams that never Register hold no worker the API needs: ListJobs answers while 200 are open.
    How fast it answers then is a figure for bench/api_under_load.py, not an assertion."""
    # The streams stay open for the whole test: the hub cuts off a stream that has not registered
    # within its register timeout (5 s by default).
    monkeypatch.setenv("VGLOBAL_REGISTER_TIMEOUT", "120")
    system.start_hub("--rate-limit", "0")
    with (
        Client(system.target, timeout=30, retries=1) as c,
        idle_agent_streams(system.target, 200, 120) as calls,
    ):
        for _ in range(50):
            c.list_jobs()  # each answered within the client's deadline, or the test fails here
        # Every stream is still open: none was refused to make room for the API.
        refused = [call.code() for call in calls if call.done()]
        assert refused == [], refused
