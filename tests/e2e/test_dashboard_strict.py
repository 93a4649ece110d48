"""The dashboard answers exactly what it was asked, against a real TLS hub with roles: an action
verb it does not know changes nothing (404), a bad input is a 400 naming the parameter and never a
traceback, an oversized token is a 401 before any hub call, and a queue-scoped reader's cluster
figures count only the jobs it may read."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request

import grpc
import pytest

from tests.e2e.dashboard_site import Site, job_manifest, queue_manifest, site, wait_phase
from vglobal.client import Client, VGlobalError
from vglobal.dial import Dial

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dashboard")]
__all__ = ["site"]


def post(site: Site, path: str, token: str, form: dict[str, str] | None = None) -> tuple[int, str]:
    data = urllib.parse.urlencode(form or {}).encode()
    req = urllib.request.Request(site.url + path, data=data, method="POST")
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_an_unknown_action_verb_changes_nothing(site: Site) -> None:
    ada = site.token("ada")
    with site.client("ada") as client:
        client.apply_queue(queue_manifest("verbs-q"))
        client.submit_job(job_manifest("verbs-1", "verbs-q"))
    wait_phase(site, "verbs-1", "Running")
    for prefix in ("", "/api"):
        for verb in ("frobnicate", "Cancel", "cancel ", "suspend"):
            quoted = urllib.parse.quote(verb)
            status, _ = post(site, f"{prefix}/jobs/default/verbs-1/{quoted}", ada)
            assert status == 404, (prefix, verb, status)
            status, _ = post(site, f"{prefix}/queues/verbs-q/{quoted}", ada)
            assert status == 404, (prefix, verb, status)
            status, _ = post(site, f"{prefix}/clusters/gpu-east/{quoted}", ada)
            assert status == 404, (prefix, verb, status)
    with site.client("ada") as client:
        assert client.get_job("verbs-1").phase == "Running"
        (queue,) = [q for q in client.list_queues() if q.name == "verbs-q"]
        assert queue.state == "Open"
        assert all(c.state != "Cordoned" for c in client.list_clusters())
    # The known verbs still act.
    status, _ = post(site, "/api/queues/verbs-q/close", ada)
    assert status == 200
    status, _ = post(site, "/api/queues/verbs-q/open", ada)
    assert status == 200
    status, body = post(site, "/api/jobs/default/verbs-1/cancel", ada)
    assert status == 200, body


BAD_INPUTS = [
    ("/api/jobs?size=%C2%B2", "size"),  # "²".isdigit() is true
    ("/api/jobs?size=" + "9" * 400, "size"),
    ("/jobs-live?rev=" + "9" * 40, "rev"),
    ("/jobs-live?rev=%D9%A3", "rev"),  # an Arabic-Indic digit
    ("/jobs/default/x/live?rev=" + "1" * 30, "rev"),
    ("/jobs-counts?rev=%C2%B2", "rev"),
    ("/api/jobs?since=0001-01-01T00:00%2B01:00", "since"),
    ("/api/jobs?until=9999-12-31T23:59-01:00", "until"),
    ("/jobs-counts?until=9999-12-31T23:59:59-12:00", "until"),
    ("/jobs-results?sort=bogus", "sort"),
    ("/api/pods?status=Bogus", "status"),
    ("/api/pods?sort=-bogus", "sort"),
    ("/jobs/default/x/logs?tail=%C2%B2", "tail"),
    ("/jobs/default/x/logs?tail=5001", "tail"),
]


@pytest.mark.parametrize(("path", "param"), BAD_INPUTS)
def test_bad_inputs_are_400_naming_the_parameter(site: Site, path: str, param: str) -> None:
    status, body, _ = site.get(path, token=site.token("ada"))
    assert status == 400, (path, status, body[:300])
    assert param in body
    assert "Traceback" not in site.system.log("dashboard")


def test_bulk_cancel_with_a_bad_filter_is_400_and_cancels_nothing(site: Site) -> None:
    with site.client("ada") as client:
        client.apply_queue(queue_manifest("bulk-bad-q"))
        client.submit_job(job_manifest("bulk-bad-1", "bulk-bad-q"))
    wait_phase(site, "bulk-bad-1", "Running")
    for query in ("sort=bogus", "since=0001-01-01T00:00%2B05:00", "size=%C2%B2"):
        status, body = post(
            site, f"/api/jobs/cancel?queue=bulk-bad-q&{query}", site.token("ada"),
            {"scope": "matching", "confirm": "yes"},
        )  # fmt: skip
        assert status == 400, (query, status, body[:300])
        assert query.split("=")[0] in body
    with site.client("ada") as client:
        assert client.get_job("bulk-bad-1").phase == "Running"
    assert "Traceback" not in site.system.log("dashboard")


def test_an_oversized_token_is_401_not_a_hub_error(site: Site) -> None:
    huge = "t" * 20_000  # past gRPC's own 16 KiB metadata limit
    status, body, _ = site.get("/api/jobs", token=huge)
    assert status == 401, (status, body[:300])
    data = urllib.parse.urlencode({"token": huge, "next": "/"}).encode()
    req = urllib.request.Request(site.url + "/login", data=data, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            status = r.status
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read().decode()
    assert status == 401, (status, body[:300])
    assert "token" in body


@pytest.mark.parametrize("size", [5000, 30_000])
def test_an_oversized_bearer_is_unauthenticated_at_the_hub_and_not_retried(site: Site, size: int) -> None:
    dial = Dial(site.system.target, ca_file=site.certs / "ca.crt", token="x" * size)
    started = time.monotonic()
    with Client(dial=dial, timeout=10, retries=4) as client, pytest.raises(VGlobalError) as caught:
        client.list_jobs()
    assert caught.value.code == grpc.StatusCode.UNAUTHENTICATED, caught.value
    assert time.monotonic() - started < 5  # not retried
    with Client(dial=dial, timeout=10, retries=4) as client, pytest.raises(VGlobalError) as caught:
        next(iter(client.watch_jobs()))
    assert caught.value.code == grpc.StatusCode.UNAUTHENTICATED, caught.value


def test_the_sdk_does_not_retry_a_token_too_large_for_the_hub_to_read(site: Site) -> None:
    """Past the hub's 64 KiB of metadata gRPC itself refuses the call (RESOURCE_EXHAUSTED, no
    retry-after): the same call can never pass, so the SDK reports it at once, watches included."""
    dial = Dial(site.system.target, ca_file=site.certs / "ca.crt", token="x" * 100_000)
    started = time.monotonic()
    with Client(dial=dial, timeout=10, retries=4) as client:
        with pytest.raises(VGlobalError) as caught:
            client.list_jobs()
        assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(VGlobalError) as caught:
            next(iter(client.watch_jobs()))
        assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert time.monotonic() - started < 10


def running_per_cluster(site: Site, token: str) -> dict[str, int]:
    status, body, _ = site.get("/api/clusters", token=token)
    assert status == 200, body
    return {c["name"]: int(c["running_jobs"]) for c in json.loads(body)["clusters"]}


def test_a_queue_scoped_reader_counts_only_its_own_jobs_on_clusters(site: Site) -> None:
    with site.client("ada") as ada:
        ada.apply_queue(queue_manifest("team-a-figures"))
        ada.apply_queue(queue_manifest("team-b-figures"))
        ada.submit_job(job_manifest("fig-a-1", "team-a-figures"))
        for i in range(3):
            ada.submit_job(job_manifest(f"fig-b-{i}", "team-b-figures"))
    for name in ("fig-a-1", "fig-b-0", "fig-b-1", "fig-b-2"):
        wait_phase(site, name, "Running")
    with site.client("ada") as ada:
        jobs = [j for j in ada.list_jobs() if j.phase == "Running"]
    mine = sum(1 for j in jobs if j.queue.startswith("team-a"))
    everyone = running_per_cluster(site, site.token("ada"))
    seen = running_per_cluster(site, site.token("vera"))
    assert sum(everyone.values()) == len(jobs) > mine
    assert sum(seen.values()) == mine, (seen, mine)
    for name, count in seen.items():
        status, body, _ = site.get(f"/api/clusters/{name}", token=site.token("vera"))
        assert status == 200
        assert json.loads(body)["cluster"]["running_jobs"] == count
    with site.client("vera") as vera:
        assert sum(c.running_jobs for c in vera.list_clusters()) == mine
    status, body, _ = site.get("/clusters", token=site.token("vera"))
    assert status == 200 and "Running jobs you may read" in body and "(all queues)" in body


def test_the_dashboards_http_limits(site: Site) -> None:
    # A body told over the limit is refused before it is read: the request is sent without it (sending
    # a megabyte the server has already refused races its close against the client's writes).
    url = urllib.parse.urlsplit(site.url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=20)
    try:
        conn.putrequest("POST", "/api/queues")
        conn.putheader("Authorization", f"Bearer {site.token('ada')}")
        conn.putheader("Content-Length", str(1024 * 1024 + 1))
        conn.endheaders()
        assert conn.getresponse().status == 413
    finally:
        conn.close()
    status, _, _ = site.get("/healthz", **{"X-Filler": "y" * 40_000})
    assert status == 431
    status, _, _ = site.get("/healthz")
    assert status == 200
