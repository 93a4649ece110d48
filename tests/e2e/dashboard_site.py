"""A hub as production runs it (TLS, tokens and roles), two simulated clusters, the dashboard in its
own process, and Chromium driven by Playwright: what the dashboard's browser tests share."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import _admin, with_database
from tests.e2e.harness import System, free_port, sim_cluster, wait_for
from tests.integration.secure_hub import make_certs
from vglobal.client import Client
from vglobal.dial import Dial

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


# Two racks under one spine, with the GPU model on the nodes: the cluster page's HyperNode tree;
# their cards listed (so the vGPU capacity the device plugin would register: 10 slots a card).
RACKED = """
apiVersion: vglobal.io/v1alpha1
kind: SimCluster
metadata: {name: gpu-west, labels: {region: west}}
spec:
  nodeGroups:
  - name: gpu-west-r0
    count: 1
    allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
    labels: {example.com/tor: tor0, example.com/spine: sp0, nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
    gpus: {count: 8, memoryMiB: 81920, model: A100}
  - name: gpu-west-r1
    count: 1
    allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
    labels: {example.com/tor: tor1, example.com/spine: sp0, nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
    gpus: {count: 8, memoryMiB: 81920, model: A100}
  hyperNodeDiscovery:
    networkTopologyTypes:
      dc:
      - nodeLabel: example.com/spine
      - nodeLabel: example.com/tor
"""


@dataclass
class Site:
    system: System
    certs: Path
    url: str  # the dashboard's base URL

    def token(self, user: str) -> str:
        return (self.certs / f"token-{user}").read_text().strip()

    def client(self, user: str) -> Client:
        dial = Dial(self.system.target, ca_file=self.certs / "ca.crt", token=self.token(user))
        return Client(dial=dial, timeout=10, retries=1)

    def get(self, path: str, token: str | None = None, **headers: str) -> tuple[int, str, Any]:
        """A plain HTTP GET (no browser): status, body and headers."""
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.url + path, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode(), r.headers
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(), exc.headers


def start_dashboard(system: System, certs: Path, *extra: str) -> str:
    port = free_port()
    system._spawn(
        "dashboard",
        ["--hub", system.target, "--ca-file", str(certs / "ca.crt"), "dashboard",
         "--listen", f"127.0.0.1:{port}", *extra],
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    wait_for(up, 30, "the dashboard to serve", system)
    return url


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, pg_server: str, template_db: str) -> Iterator[Site]:
    """One secure system for the module's tests (each test uses queues and jobs of its own)."""
    tmp = tmp_path_factory.mktemp("site")
    name = f"vglobal_d_{uuid.uuid4().hex[:12]}"
    with _admin(pg_server) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
    system = System(tmp=tmp, database_url=with_database(pg_server, name))
    certs = make_certs(tmp / "certs")
    agent_port = free_port()
    try:
        system.start_hub(
            "--tls-cert", str(certs / "hub.crt"), "--tls-key", str(certs / "hub.key"),
            "--client-ca", str(certs / "ca.crt"), "--agent-listen", f"127.0.0.1:{agent_port}",
            "--auth-config", str(certs / "auth.yaml"), "--rate-limit", "0", "--max-watches", "256",
            ca_file=certs / "ca.crt",
        )  # fmt: skip
        for cluster, spec in (("gpu-east", sim_cluster("gpu-east", 2)), ("gpu-west", RACKED)):
            system.start_agent(
                cluster, spec,
                dial_args=["--hub", f"127.0.0.1:{agent_port}", "--ca-file", str(certs / "ca.crt"),
                           "--cert", str(certs / f"agent-{cluster}.crt"),
                           "--key", str(certs / f"agent-{cluster}.key")],
            )  # fmt: skip
        url = start_dashboard(system, certs)
        s = Site(system, certs, url)
        with s.client("ada") as ada:
            wait_for(lambda: len(ada.list_clusters()) == 2, 60, "both clusters to join", system)
        yield s
    finally:
        system.stop()
        with _admin(pg_server) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


def login(browser: Any, site: Site, user: str) -> Any:
    """A fresh browser context logged in as ``user`` through the login form; its page."""
    # CSP bypassed only so the test can inject axe-core; the pages themselves run no inline script.
    context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.goto(site.url + "/")
    assert page.url.startswith(site.url + "/login")
    page.fill("#token", site.token(user))
    page.click("button[type=submit]")
    page.wait_for_url(site.url + "/")
    return page


def screenshot(page: Any, name: str) -> None:
    if os.environ.get("VGLOBAL_SCREENSHOTS", "1") != "0":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """The serious and critical accessibility violations axe-core finds on the page."""
    page.add_script_tag(content=AXE.read_text())
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def job_manifest(name: str, queue: str, *, duration: str = "1h", namespace: str = "default",
                 gpus: int = 1, labels: dict[str, str] | None = None) -> str:  # fmt: skip
    label_text = ", ".join(f"{k}: {v}" for k, v in (labels or {}).items())
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{{label_text}}}
spec:
  queue: {queue}
  minAvailable: 1
  tasks:
  - name: worker
    replicas: 1
    template:
      metadata: {{annotations: {{vglobal.io/sim-duration: {duration}}}}}
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1", memory: 1Gi, nvidia.com/gpu: "{gpus}"}}}}}}]
"""


def queue_manifest(name: str, weight: int = 1, gpus: int | None = None) -> str:
    cap = f"\n  capability: {{nvidia.com/gpu: {gpus}}}" if gpus is not None else ""
    return f"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {name}}}
spec:
  weight: {weight}
  reclaimable: true{cap}
"""


def wait_phase(site: Site, name: str, phase: str, timeout: float = 60) -> None:
    with site.client("ada") as ada:
        wait_for(lambda: ada.get_job(name).phase == phase, timeout, f"{name} to be {phase}", site.system)




def apply_files(site: Site, user: str, *paths: Path) -> None:
    """``vglobal apply -f`` as ``user`` (queues, jobs, CronJobs, JobFlows in one go)."""
    import subprocess
    import sys

    for path in paths:
        subprocess.run(
            [sys.executable, "-m", "vglobal", "--hub", site.system.target, "--ca-file",
             str(site.certs / "ca.crt"), "--token", site.token(user), "apply", "-f", str(path)],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
