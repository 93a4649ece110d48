"""Watches against a real TLS hub with roles and the dashboard in front of it: one caller gets only
its share of the hub's watches and a refusal says when to retry; a dashboard caller's live pages
share one hub watch; and a stream ends when its caller loses the right to it (auth reload, logout)."""

from __future__ import annotations

import http.client
import json
import signal
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from tests.e2e.dashboard_site import job_manifest, queue_manifest, start_dashboard
from tests.e2e.harness import System, free_port, wait_for
from tests.integration.secure_hub import make_certs
from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.client import Client, VGlobalError
from vglobal.dial import Dial

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dashboard")]
EVENT_WAIT = 60.0  # seconds a stream may take to say something on a loaded machine


def start(system: System, certs: Path, *extra: str) -> None:
    system.start_hub(
        "--tls-cert", str(certs / "hub.crt"), "--tls-key", str(certs / "hub.key"),
        "--client-ca", str(certs / "ca.crt"), "--agent-listen", f"127.0.0.1:{free_port()}",
        "--auth-config", str(certs / "auth.yaml"), "--rate-limit", "0", *extra,
        ca_file=certs / "ca.crt",
    )  # fmt: skip


def token(certs: Path, user: str) -> str:
    return (certs / f"token-{user}").read_text().strip()


def dial(system: System, certs: Path, user: str) -> Dial:
    return Dial(system.target, ca_file=certs / "ca.crt", token=token(certs, user))


class RawWatch:
    """A WatchJobs call as any gRPC client makes it (no SDK reconnects)."""

    def __init__(self, system: System, certs: Path, user: str) -> None:
        self.channel = dial(system, certs, user).channel()
        metadata = (("authorization", f"Bearer {token(certs, user)}"),)
        self.call: Any = jobs_pb2_grpc.JobServiceStub(self.channel).WatchJobs(
            jobs_pb2.WatchJobsRequest(), metadata=metadata, timeout=300
        )

    def first(self) -> jobs_pb2.JobEvent | grpc.RpcError:
        try:
            event: jobs_pb2.JobEvent = next(self.call)
        except grpc.RpcError as exc:
            return exc
        return event

    def end(self) -> grpc.RpcError:
        """The error the stream ends with (events before it are read and dropped)."""
        try:
            for _ in self.call:
                pass
        except grpc.RpcError as exc:
            return exc
        raise AssertionError("the stream ended without a status")

    def close(self) -> None:
        self.call.cancel()
        self.channel.close()


def test_one_caller_gets_only_its_share_and_a_refusal_says_when_to_retry(
    system: System, tmp_path: Path
) -> None:
    certs = make_certs(tmp_path / "certs")
    start(system, certs, "--max-watches", "8")
    held: list[RawWatch] = []
    try:
        refusal = None
        for _ in range(8):
            w = RawWatch(system, certs, "vic")
            held.append(w)
            got = w.first()
            if isinstance(got, grpc.RpcError):
                refusal = got
                break
        assert refusal is not None, "one caller took every watch of the hub"
        assert refusal.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        retry: dict[str, Any] = dict(refusal.trailing_metadata() or ())  # type: ignore[arg-type]
        assert int(retry["retry-after-ms"]) > 0, retry
        assert len(held) - 1 < 8
        # Another caller still gets a watch.
        other = RawWatch(system, certs, "vera")
        held.append(other)
        assert isinstance(other.first(), jobs_pb2.JobEvent)
    finally:
        for w in held:
            w.close()


class Sse:
    """One Server-Sent Events stream from the dashboard, read event by event."""

    def __init__(self, url: str, path: str, *, bearer: str | None = None, cookie: str | None = None) -> None:
        parts = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=EVENT_WAIT)
        headers = {"Accept": "text/event-stream"}
        if bearer:
            headers["Authorization"] = f"Bearer {bearer}"
        if cookie:
            headers["Cookie"] = cookie
        self.conn.request("GET", path, headers=headers)
        self.response = self.conn.getresponse()
        self.retry: int | None = None  # the last ``retry:`` the stream gave
        assert self.response.status == 200, self.response.read()[:300]

    def next_event(self) -> tuple[str, str]:
        """The next named event and its data (comments and ``retry:`` lines skipped)."""
        name, data = "", ""
        while True:
            try:
                line = self.response.readline().decode()
            except TimeoutError:
                raise AssertionError("the stream said nothing") from None
            if not line:
                return "closed", ""
            line = line.rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
            elif line.startswith("retry: "):
                self.retry = int(line[7:])
            elif line == "" and name:
                return name, data

    def events(self) -> Iterator[tuple[str, str]]:
        while True:
            event = self.next_event()
            yield event
            if event[0] == "closed":
                return

    def close(self) -> None:
        self.conn.close()


def until(sse: Sse, *names: str) -> tuple[str, str]:
    for name, data in sse.events():
        if name in names or name == "closed":
            return name, data
    raise AssertionError("unreachable")


def test_live_pages_of_one_caller_share_one_hub_watch(system: System, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    start(system, certs, "--max-watches", "4")
    url = start_dashboard(system, certs)
    with Client(dial=dial(system, certs, "ada"), timeout=10, retries=1) as ada:
        ada.apply_queue(queue_manifest("shared-q"))
    streams = [Sse(url, f"/jobs-live?queue=shared-q&n={i}", bearer=token(certs, "vic")) for i in range(6)]
    try:
        with Client(dial=dial(system, certs, "ada"), timeout=10, retries=1) as ada:
            ada.submit_job(job_manifest("shared-1", "shared-q"))
        for s in streams:
            assert until(s, "changed", "gone")[0] == "changed"
        # A caller whose share is taken hears so, and when to ask again.
        held = RawWatch(system, certs, "vera")
        assert isinstance(held.first(), jobs_pb2.JobEvent)
        refused = Sse(url, "/jobs-live", bearer=token(certs, "vera"))
        streams.append(refused)
        name, data = until(refused, "gone", "changed")
        assert name == "gone" and "share" in json.loads(data)["reason"], data
        assert refused.retry and refused.retry > 0 and json.loads(data)["retry_ms"] == refused.retry
        held.close()
    finally:
        for s in streams:
            s.close()


def edit_auth(certs: Path, fn: Any) -> None:
    path = certs / "auth.yaml"
    config = yaml.safe_load(path.read_text())
    fn(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def test_streams_end_when_their_caller_loses_the_right(system: System, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    start(system, certs)
    url = start_dashboard(system, certs)
    with Client(dial=dial(system, certs, "ada"), timeout=10, retries=1) as ada:
        ada.apply_queue(queue_manifest("team-a-rights"))
    vic_watch, vera_watch = RawWatch(system, certs, "vic"), RawWatch(system, certs, "vera")
    ada_watch = RawWatch(system, certs, "ada")
    vic_sse = Sse(url, "/jobs-live?queue=team-a-rights", bearer=token(certs, "vic"))
    try:
        for w in (vic_watch, vera_watch, ada_watch):
            assert isinstance(w.first(), jobs_pb2.JobEvent)

        def revoke(config: dict[str, Any]) -> None:
            config["users"] = [u for u in config["users"] if u["name"] != "vic"]
            config["roleBindings"] = [b for b in config["roleBindings"] if b["subject"] != "vic"]
            for b in config["roleBindings"]:
                if b["subject"] == "vera":
                    b["queues"] = ["team-z*"]

        edit_auth(certs, revoke)
        system.procs["hub"].send_signal(signal.SIGHUP)
        assert vic_watch.end().code() == grpc.StatusCode.UNAUTHENTICATED
        assert vera_watch.end().code() == grpc.StatusCode.PERMISSION_DENIED
        name, reason = until(vic_sse, "gone")
        assert name == "gone" and "token" in json.loads(reason)["reason"], reason
        # The unchanged caller's stream goes on: it still sees a change.
        with Client(dial=dial(system, certs, "ada"), timeout=10, retries=1) as ada:
            ada.submit_job(job_manifest("rights-1", "team-a-rights"))
        while True:
            got = ada_watch.first()
            assert isinstance(got, jobs_pb2.JobEvent), got
            if got.type != jobs_pb2.JobEvent.BOOKMARK and got.job.name == "rights-1":
                break
    finally:
        for w in (vic_watch, vera_watch, ada_watch):
            w.close()
        vic_sse.close()


def test_logout_ends_the_sessions_streams(system: System, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    start(system, certs)
    url = start_dashboard(system, certs)
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    body = urllib.parse.urlencode({"token": token(certs, "vic"), "next": "/"})
    conn.request("POST", "/login", body, {"Content-Type": "application/x-www-form-urlencoded"})
    response = conn.getresponse()
    response.read()
    assert response.status == 303
    cookie = response.getheader("set-cookie", "").split(";")[0]
    conn.request("GET", "/", headers={"Cookie": cookie})
    page = conn.getresponse().read().decode()
    csrf = page.split('"X-CSRF-Token": "', 1)[1].split('"', 1)[0]
    sse = Sse(url, "/jobs-live", cookie=cookie)
    try:
        conn.request("POST", "/logout", f"csrf={csrf}",
                     {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
        response = conn.getresponse()
        response.read()
        assert response.status == 303
        name, reason = until(sse, "gone")
        assert name == "gone" and "logged out" in json.loads(reason)["reason"], reason
    finally:
        sse.close()
        conn.close()


def test_a_reload_reaches_every_api_process(system: System, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    start(system, certs, "--api-processes", "3")
    vic = token(certs, "vic")
    wait_for(lambda: system.log("hub").count("hub API process listening") >= 2, 60, "the API processes", system)

    def remove_vic(config: dict[str, Any]) -> None:
        config["users"] = [u for u in config["users"] if u["name"] != "vic"]
        config["roleBindings"] = [b for b in config["roleBindings"] if b["subject"] != "vic"]

    edit_auth(certs, remove_vic)
    system.procs["hub"].send_signal(signal.SIGHUP)
    wait_for(lambda: system.log("hub").count("auth config reloaded") >= 3, 30, "every process to reload", system)
    # New connections land on any of the three processes: none of them knows vic any more.
    for _ in range(12):
        dial = Dial(system.target, ca_file=certs / "ca.crt", token=vic)
        with Client(dial=dial, timeout=10, retries=1) as client:
            try:
                client.list_jobs()
            except VGlobalError as exc:
                assert exc.code == grpc.StatusCode.UNAUTHENTICATED
            else:
                raise AssertionError("a process still took the removed token")
