"""Two kind clusters with the agent from deploy/ in each, and a hub on this host that they dial.

Everything goes through the tools a platform engineer uses: kind, docker, kubectl (-k on the
kustomization in tests/kind/overlay, which is deploy/agent with the locally built image) and the
`vglobal` CLI with TLS (certificates from `vglobal certs init`) and a bearer token.

Knobs (environment): VGLOBAL_KIND_HUB_HOST, the address the kind nodes reach this host at (default:
the IPv4 gateway of docker network "kind"); VGLOBAL_KIND_KEEP=1 keeps the clusters afterwards;
an existing cluster of the same name is reused (and then kept).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_CONFIGS = sorted((ROOT / "clusters" / "kind").glob("*.yaml"))
OVERLAY = ROOT / "tests" / "kind" / "overlay"
IMAGE = "vglobal:kind-test"
BUSYBOX = "busybox:1.36.1"
NAMESPACE = "vglobal"


def run(*args: str, timeout: float = 600, input: str | None = None) -> str:
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, input=input, check=False)
    if p.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {p.returncode}:\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
        )
    return p.stdout


def wait_for(
    cond: Callable[[], Any], timeout: float, what: str, dump: Callable[[], str] | None = None
) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(1.0)
    raise AssertionError(
        f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}\n{dump() if dump else ''}"
    )


def hub_host() -> str:
    if os.environ.get("VGLOBAL_KIND_HUB_HOST"):
        return os.environ["VGLOBAL_KIND_HUB_HOST"]
    net = json.loads(run("docker", "network", "inspect", "kind"))[0]
    for cfg in net["IPAM"]["Config"]:
        gateway = cfg.get("Gateway", "")
        if gateway and ":" not in gateway:
            return str(gateway)
    raise AssertionError("docker network kind has no IPv4 gateway; set VGLOBAL_KIND_HUB_HOST")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    name: str
    kubeconfig: Path
    created: bool

    def kubectl(self, *args: str, timeout: float = 300, input: str | None = None) -> str:
        return run("kubectl", "--kubeconfig", str(self.kubeconfig), *args, timeout=timeout, input=input)

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json"))

    def pods(self, job: str, namespace: str = "default") -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.json(
            "get", "pods", "-n", namespace, "-l", f"volcano.sh/job-name={job}"
        )["items"]
        return items

    def agent_pods(self) -> list[str]:
        items = self.json("get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=agent")["items"]
        return sorted(p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp"))

    def lease_holder(self) -> str | None:
        """The agent pod named by the Lease the agents elect through."""
        pods = self.agent_pods()
        for lease in self.json("get", "leases", "-n", NAMESPACE)["items"]:
            holder = (lease.get("spec") or {}).get("holderIdentity") or ""
            for pod in pods:
                if pod in holder:
                    return pod
        return None


def create_cluster(config: Path, workdir: Path) -> Cluster:
    name = yaml.safe_load(config.read_text())["name"]
    kubeconfig = workdir / f"{name}.kubeconfig"
    exists = name in run("kind", "get", "clusters").split()
    if exists:
        kubeconfig.write_text(run("kind", "get", "kubeconfig", "--name", name))
    else:
        run(
            "kind", "create", "cluster", "--config", str(config), "--kubeconfig", str(kubeconfig), "--wait", "300s",
            timeout=900,
        )  # fmt: skip
    return Cluster(name=name, kubeconfig=kubeconfig, created=not exists)


def fake_gpus(cluster: Cluster) -> dict[str, int]:
    """kind has no GPUs: give every node labelled by GPU Feature Discovery the nvidia.com/gpu
    capacity its label announces (the kubelet keeps extended resources it did not set)."""
    out: dict[str, int] = {}
    for node in cluster.json("get", "nodes")["items"]:
        labels = node["metadata"].get("labels", {})
        if "nvidia.com/gpu.count" not in labels:
            continue
        count = labels["nvidia.com/gpu.count"]
        patch = [
            {"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": count},
            {"op": "add", "path": "/status/allocatable/nvidia.com~1gpu", "value": count},
        ]
        cluster.kubectl(
            "patch",
            "node",
            node["metadata"]["name"],
            "--subresource=status",
            "--type=json",
            "-p",
            json.dumps(patch),
        )
        out[node["metadata"]["name"]] = int(count)
    return out


@dataclass
class Hub:
    workdir: Path
    host: str
    port: int = 0
    agent_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def agent_address(self) -> str:
        """Where agents with client certificates dial (mutual TLS on a port of its own)."""
        return f"{self.host}:{self.agent_port}"

    @property
    def certs(self) -> Path:
        return self.workdir / "certs"

    def init_certs(self, clusters: list[str]) -> None:
        args = ["certs", "init", "--dir", str(self.certs), "--hub-host", self.host, "--user", "tester:admin"]
        for name in clusters:
            args += ["--cluster", name]
        self.vglobal(*args, hub=False)
        self.env = {
            "VGLOBAL_CA_FILE": str(self.certs / "ca.crt"),
            "VGLOBAL_TOKEN": (self.certs / "token-tester").read_text().strip(),
        }

    def start(self) -> None:
        self.port = free_port()
        self.agent_port = free_port()
        self.env["VGLOBAL_HUB"] = self.address
        log = (self.workdir / "hub.log").open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "vglobal", "hub",
                "--listen", f"0.0.0.0:{self.port}",
                "--data-dir", str(self.workdir / "hub-data"),
                "--tls-cert", str(self.certs / "hub.crt"),
                "--tls-key", str(self.certs / "hub.key"),
                "--client-ca", str(self.certs / "ca.crt"),
                "--agent-listen", f"0.0.0.0:{self.agent_port}",
                "--auth-config", str(self.certs / "auth.yaml"),
                "--dispatch-interval", "500ms",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        wait_for(self.healthy, 120, "the hub to serve", self.log)

    def healthy(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"the hub exited {self.proc.returncode}:\n{self.log()}")
        p = subprocess.run(
            [sys.executable, "-m", "vglobal", "--hub", self.address, "health", "--timeout", "2s"],
            capture_output=True,
            env={**os.environ, **self.env},
            timeout=30,
            check=False,
        )
        return p.returncode == 0

    def vglobal(self, *args: str, hub: bool = True) -> str:
        env = {**os.environ, **self.env} if hub else dict(os.environ)
        p = subprocess.run(
            [sys.executable, "-m", "vglobal", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        if p.returncode != 0:
            raise AssertionError(f"vglobal {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        return p.stdout

    def get(self, kind: str, *args: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = json.loads(self.vglobal("get", kind, "-o", "json", *args))
        return rows

    def job(self, name: str) -> dict[str, Any] | None:
        return next((j for j in self.get("jobs") if j["name"] == name), None)

    def wait_job(self, name: str, phases: set[str], timeout: float = 300) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            j = self.job(name)
            return j if j and j["phase"] in phases else None

        found: dict[str, Any] = wait_for(reached, timeout, f"job {name} to reach {sorted(phases)}", self.dump)
        return found

    def log(self) -> str:
        path = self.workdir / "hub.log"
        return path.read_text(errors="replace")[-6000:] if path.exists() else ""

    def dump(self) -> str:
        try:
            jobs = self.vglobal("get", "jobs", "-o", "wide")
        except AssertionError as exc:
            jobs = str(exc)
        return f"--- jobs\n{jobs}\n--- hub log (tail)\n{self.log()}"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def install_agent(cluster: Cluster, hub: Hub) -> None:
    """What the README tells a platform engineer to do in each member cluster."""
    cluster.kubectl("apply", "-f", str(ROOT / "deploy" / "namespace.yaml"))
    secret = cluster.kubectl(
        "create", "secret", "generic", "vglobal-agent", "-n", NAMESPACE,
        f"--from-literal=hub={hub.agent_address}",
        f"--from-literal=cluster={cluster.name}",
        f"--from-file=ca.crt={hub.certs / 'ca.crt'}",
        f"--from-file=tls.crt={hub.certs / f'agent-{cluster.name}.crt'}",
        f"--from-file=tls.key={hub.certs / f'agent-{cluster.name}.key'}",
        "--dry-run=client", "-o", "yaml",
    )  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=secret)
    cluster.kubectl("apply", "-k", str(OVERLAY))
    cluster.kubectl(
        "rollout", "status", "-n", NAMESPACE, "deployment/vglobal-agent", "--timeout=300s", timeout=330
    )


def agent_logs(cluster: Cluster) -> str:
    try:
        return cluster.kubectl(
            "logs", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=agent", "--tail=100", "--prefix"
        )
    except AssertionError as exc:
        return str(exc)
