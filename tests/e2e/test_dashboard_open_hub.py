"""The dashboard in front of an open hub (loopback, no auth config: the README's first local setup),
in Chromium: a rebound DNS name reaches nothing, a login is still needed, and a live page that lost
its stream comes back by itself once the hub takes watches again."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from tests.e2e.dashboard_site import CHROMIUM, CHROMIUM_ARGS, job_manifest, queue_manifest
from tests.e2e.harness import System, free_port, sim_cluster, wait_for
from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.dial import Dial

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dashboard")]
REBOUND = "rebind.test"  # the attacker's name, resolved to loopback as after a DNS rebinding


def dashboard(system: System, *extra: str) -> str:
    port = free_port()
    system._spawn("dashboard", ["--hub", system.target, "dashboard", "--listen", f"127.0.0.1:{port}", *extra])
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    wait_for(up, 30, "the dashboard to serve", system)
    return url


@pytest.fixture
def chromium() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        rules = f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1"
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, rules])
        yield b
        b.close()


def open_hub(system: System, *extra: str) -> None:
    system.start_hub("--rate-limit", "0", *extra)
    system.start_agent("east", sim_cluster("east", 1))
    with system.client() as c:
        wait_for(lambda: len(c.list_clusters()) == 1, 60, "the cluster to join", system)


STEAL = """async (path) => {
  const page = await fetch(path, {credentials: "include"});
  const html = await page.text();
  const csrf = html.match(/"X-CSRF-Token": "([^"]+)"/);
  if (!csrf) return {status: page.status, cancel: null};
  const cancel = await fetch(path + "/cancel", {method: "POST", credentials: "include",
                                                headers: {"X-CSRF-Token": csrf[1]}});
  return {status: page.status, cancel: cancel.status};
}"""


def test_a_rebound_name_reaches_nothing_and_an_open_hub_still_needs_a_login(
    system: System, chromium: Any
) -> None:
    open_hub(system)
    with system.client() as c:
        c.apply_queue(queue_manifest("rebind-q"))
        c.submit_job(job_manifest("victim", "rebind-q"))
        wait_for(lambda: c.get_job("victim").phase == "Running", 60, "the job to run", system)
    url = dashboard(system)
    port = url.rsplit(":", 1)[1]
    context = chromium.new_context()
    page = context.new_page()
    response = page.goto(f"http://{REBOUND}:{port}/jobs/default/victim")
    assert response is not None and response.status == 421
    stolen = page.evaluate(STEAL, "/jobs/default/victim")
    assert stolen["cancel"] is None and stolen["status"] == 421, stolen
    with system.client() as c:
        assert c.get_job("victim").phase == "Running"
    # Its own name: a login with the token the dashboard printed at start, and nothing before it.
    page.goto(url + "/jobs/default/victim")
    assert page.url.startswith(url + "/login")
    printed = re.search(r"login token: (\S+)", system.log("dashboard"))
    assert printed is not None, system.log("dashboard")
    page.fill("#token", "a-guess")
    page.click("button[type=submit]")
    assert page.url.startswith(url + "/login")
    page.fill("#token", printed.group(1))
    page.click("button[type=submit]")
    page.wait_for_url(url + "/jobs/default/victim")
    assert "victim" in page.text_content("h1")
    context.close()


def test_allowed_host_and_no_login(system: System, chromium: Any) -> None:
    open_hub(system)
    url = dashboard(system, "--allowed-host", REBOUND, "--no-login")
    port = url.rsplit(":", 1)[1]
    page = chromium.new_page()
    response = page.goto(f"http://{REBOUND}:{port}/queues")
    assert response is not None and response.status == 200
    assert page.url.endswith("/queues")
    page.close()


def hold_watches(system: System) -> list[Any]:
    """Watches opened by this test until the hub refuses one: the hub takes none from this caller."""
    held: list[Any] = []
    channel = Dial(system.target).channel()
    stub = jobs_pb2_grpc.JobServiceStub(channel)
    for _ in range(64):
        call = stub.WatchJobs(jobs_pb2.WatchJobsRequest(), timeout=600)
        try:
            next(call)
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            return [channel, *held]
        held.append(call)
    raise AssertionError("the hub never refused a watch")


def release(held: list[Any]) -> None:
    channel, *calls = held
    for call in calls:
        call.cancel()
    channel.close()


def test_a_live_page_that_lost_its_stream_is_live_again_soon_after(system: System, chromium: Any) -> None:
    # A tiny watch log: a page that resumed from revision 0 would find it pruned, for ever.
    open_hub(system, "--max-watches", "4", "--watch-keep-changes", "1")
    with system.client() as c:
        c.apply_queue(queue_manifest("resume-q"))
        for i in range(3):
            c.submit_job(job_manifest(f"before-{i}", "resume-q", duration="1s"))

        def pruned() -> bool:
            stream = c.jobs.WatchJobs(jobs_pb2.WatchJobsRequest(from_revision=0), timeout=5)
            try:
                next(stream)
            except grpc.RpcError as exc:
                return exc.code() == grpc.StatusCode.OUT_OF_RANGE
            finally:
                stream.cancel()
            return False

        wait_for(pruned, 90, "the watch log to drop revision 0", system)
    url = dashboard(system, "--no-login")
    page = chromium.new_page()
    attempts: list[str] = []
    page.on("request", lambda r: attempts.append(r.url) if "/jobs-live" in r.url else None)
    held = hold_watches(system)
    try:
        page.goto(url + "/jobs?queue=resume-q")
        page.wait_for_function("() => document.querySelector('[data-live]').dataset.state === 'waiting'")
        page.wait_for_timeout(8000)  # the refusal lasts a while: how often does the page ask?
        asked = len(attempts)
    finally:
        release(held)
    # 1 s, 2 s, 4 s... between attempts, not one a second for ever.
    assert 1 <= asked <= 5, attempts
    page.wait_for_function(
        "() => document.querySelector('[data-live]').dataset.state === 'live'", timeout=30_000
    )
    with system.client() as c:
        c.submit_job(job_manifest("after-1", "resume-q"))
    page.wait_for_selector("[data-job='default/after-1']", timeout=30_000)
    page.close()
