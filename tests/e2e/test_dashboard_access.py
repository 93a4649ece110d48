"""The dashboard's access rules in a real browser against a real hub: login and logout, a bad
token, the session cookie's flags, CSRF, bearer tokens, and a viewer who can neither see nor forge
a cancel (the hub refuses it)."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest

from tests.e2e.dashboard_site import Site, browser, job_manifest, login, queue_manifest, site, wait_phase
from tests.e2e.harness import free_port, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dashboard")]
__all__ = ["browser", "site"]


def csrf_of(page: Any) -> str:
    headers = json.loads(page.get_attribute("body", "hx-headers"))
    return str(headers["X-CSRF-Token"])


def test_login_rejects_a_bad_token_and_logout_ends_the_session(site: Site, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    response = page.goto(site.url + "/jobs?queue=x")
    assert page.url.startswith(site.url + "/login")
    page.fill("#token", "not-a-token-of-anyone")
    with page.expect_response(lambda r: r.url.endswith("/login") and r.request.method == "POST") as posted:
        page.click("button[type=submit]")
    assert posted.value.status == 401
    assert "does not accept this token" in page.text_content("[role=alert]")
    assert not context.cookies()
    page.fill("#token", site.token("alice"))
    page.click("button[type=submit]")
    page.wait_for_url(site.url + "/jobs?queue=x")  # back to the whole link it came for
    (cookie,) = context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert site.token("alice") not in cookie["value"]
    page.click("text=Log out")
    page.wait_for_url(site.url + "/login")
    response = page.goto(site.url + "/")
    assert response is not None and page.url.startswith(site.url + "/login")
    # The old cookie is dead on the server too, not only forgotten by the browser.
    status, _, _ = site.get("/api/jobs", Cookie=f"{cookie['name']}={cookie['value']}")
    assert status == 401
    context.close()


def test_bearer_tokens_work_on_json_endpoints_and_nothing_anonymous(site: Site) -> None:
    status, body, _ = site.get("/api/clusters")
    assert status == 401
    status, body, _ = site.get("/api/clusters", token=site.token("vic"))
    assert status == 200
    assert sorted(c["name"] for c in json.loads(body)["clusters"]) == ["gpu-east", "gpu-west"]
    status, body, _ = site.get("/api/jobs", token="wrong-token")
    assert status == 401
    for path in ("/api/pods", "/api/jobs/default/x"):
        assert site.get(path)[0] == 401, path
    status, _, headers = site.get("/", token=site.token("vic"))
    assert status == 200 and "frame-ancestors 'none'" in headers["content-security-policy"]
    log = site.system.log("dashboard")
    for user in ("vic", "alice", "ada"):
        assert site.token(user) not in log
    assert "wrong-token" not in log


def test_a_viewer_sees_no_cancel_and_the_hub_refuses_a_forged_one(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        ada.apply_queue(queue_manifest("team-a-view"))
        ada.submit_job(job_manifest("viewed-1", "team-a-view"))
    wait_phase(site, "viewed-1", "Running")
    page = login(browser, site, "vic")
    page.goto(site.url + "/jobs?queue=team-a-view")
    assert page.locator("[data-job='default/viewed-1']").count() == 1
    assert page.locator("text=Cancel selected").count() == 0
    page.goto(site.url + "/jobs/default/viewed-1")
    assert page.locator("button:has-text('Cancel job')").count() == 0
    forged = page.request.post(
        site.url + "/jobs/default/viewed-1/cancel", form={"csrf": csrf_of(page)}, max_redirects=0
    )
    assert forged.status == 403
    assert "may not cancel jobs" in forged.text()
    forged = page.request.post(
        site.url + "/api/jobs/default/viewed-1/cancel", headers={"Authorization": f"Bearer {site.token('vic')}"}
    )
    assert forged.status == 403
    with site.client("ada") as ada:
        assert ada.get_job("viewed-1").phase == "Running"
    page.context.close()


def test_an_action_without_the_csrf_token_is_refused(site: Site, browser: Any) -> None:
    with site.client("alice") as alice:
        site.client("ada").apply_queue(queue_manifest("team-a-csrf"))
        alice.submit_job(job_manifest("csrf-1", "team-a-csrf"))
    wait_phase(site, "csrf-1", "Running")
    page = login(browser, site, "alice")
    page.goto(site.url + "/jobs/default/csrf-1")
    for form in ({}, {"csrf": "guessed"}):
        refused = page.request.post(site.url + "/jobs/default/csrf-1/cancel", form=form, max_redirects=0)
        assert refused.status == 403 and "CSRF" in refused.text()
    with site.client("ada") as ada:
        assert ada.get_job("csrf-1").phase == "Running"
    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation():
        page.click("button:has-text('Cancel job')")
    page.wait_for_url(site.url + "/jobs/default/csrf-1")
    wait_phase(site, "csrf-1", "Aborted", 30)
    page.reload()
    assert page.get_by_text("Cancelled by").count() == 1 or "alice" in page.text_content("#summary")
    page.context.close()


def test_plaintext_beyond_loopback_is_refused() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "vglobal", "dashboard", "--listen", "0.0.0.0:18080"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 1
    assert re.search(r"refusing to serve the dashboard in plaintext on 0\.0\.0\.0:18080", res.stderr)


def test_bulk_cancel_of_everything_matching_asks_first_and_each_job_is_checked(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        for q in ("team-a-bulk", "team-b-bulk"):
            ada.apply_queue(queue_manifest(q))
        for i in range(3):
            ada.submit_job(job_manifest(f"bulk-a{i}", "team-a-bulk", labels={"batch": "bulk"}))
        ada.submit_job(job_manifest("bulk-b0", "team-b-bulk", labels={"batch": "bulk"}))
        wait_for(lambda: all(ada.get_job(f"bulk-a{i}").phase == "Running" for i in range(3)), 60,
                 "the bulk jobs to run", site.system)  # fmt: skip
    page = login(browser, site, "alice")
    page.goto(site.url + "/jobs?label=batch%3Dbulk")
    # alice reads only team-a* queues: the list and its count are hers, as the hub filters them.
    assert page.text_content("[data-testid=total]") == "3"
    with page.expect_navigation():
        page.click("text=Cancel all matching…")
    assert page.text_content("h1") == "Cancel 3 jobs?"
    with site.client("ada") as ada:
        assert ada.get_job("bulk-a0").phase == "Running"  # nothing happened before the confirmation
    with page.expect_navigation():
        page.click("text=Yes, cancel 3")
    results = page.locator("[data-testid=results] tbody tr")
    assert results.count() == 3
    assert all("cancelled" in t for t in results.all_text_contents())
    with site.client("ada") as ada:
        wait_for(lambda: all(ada.get_job(f"bulk-a{i}").phase == "Aborted" for i in range(3)), 30,
                 "the three to be aborted", site.system)  # fmt: skip
        assert ada.get_job("bulk-b0").phase == "Running"
    # A forged selection naming a job of a queue she may not touch is refused by the hub, per job.
    page.goto(site.url + "/jobs")
    forged = page.request.post(
        site.url + "/jobs/cancel", form={"csrf": csrf_of(page), "sel": "default/bulk-b0", "confirm": "yes"}
    )
    assert forged.status == 403 and "refused" in forged.text()
    with site.client("ada") as ada:
        assert ada.get_job("bulk-b0").phase == "Running"
    page.context.close()


def test_over_https_the_session_cookie_is_secure(site: Site) -> None:
    """A second dashboard serving HTTPS with a certificate from the same CA: login works and the
    cookie it sets carries Secure (besides HttpOnly and SameSite=Strict)."""
    port = free_port()
    certs = site.certs
    site.system._spawn(
        "dashboard-tls",
        ["--hub", site.system.target, "--ca-file", str(certs / "ca.crt"), "dashboard", "--listen",
         f"127.0.0.1:{port}", "--tls-cert", str(certs / "hub.crt"), "--tls-key", str(certs / "hub.key")],
    )  # fmt: skip
    tls = ssl.create_default_context(cafile=str(certs / "ca.crt"))

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *_: Any, **__: Any) -> None:
            return None

    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=tls), NoRedirect)
    body = urllib.parse.urlencode({"token": site.token("vic"), "next": "/"}).encode()

    def login_answer() -> Any:
        try:
            return opener.open(f"https://localhost:{port}/login", data=body, timeout=5)
        except urllib.error.HTTPError as exc:
            return exc
        except OSError:
            return None

    answer = wait_for(login_answer, 30, "the HTTPS dashboard", site.system)
    assert answer.code == 303
    cookie = answer.headers["set-cookie"]
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
