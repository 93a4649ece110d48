"""The dashboard in a real browser against a real TLS hub with roles and two simulated clusters: a
HyperJob's page (children, their clusters, why one waits, events, cancel and delete behind the roles
and CSRF) and the list, linked from nav and from each child; a login that keeps the whole link it
interrupted; jobs grouped under headers with counts; a cluster page whose bars and words agree, with
each node's vGPU rows in one correct summary line. No serious accessibility violation on any."""

from __future__ import annotations

import http.client
import urllib.parse
from typing import Any

import pytest

from tests.e2e.dashboard_site import (
    Site,
    axe_violations,
    browser,
    job_manifest,
    login,
    queue_manifest,
    screenshot,
    site,
    wait_phase,
)
from tests.e2e.harness import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("dashboard")]
__all__ = ["browser", "site"]


def hyperjob(name: str, gpus: int, clusters: str = "[gpu-east, gpu-west]") -> str:
    return f"""
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {{name: {name}}}
spec:
  replicatedJobs:
  - name: part
    replicas: 2
    clusterNames: {clusters}
    templateSpec:
      tasks:
      - name: worker
        replicas: 1
        template:
          metadata: {{annotations: {{vglobal.io/sim-duration: 1h}}}}
          spec:
            containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1", nvidia.com/gpu: "{gpus}"}}}}}}]
"""


def test_a_hyperjob_has_its_page_and_acts_as_one(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        ada.submit_job(hyperjob("hj-run", 0))  # no GPU: the cluster page's test counts them
        ada.submit_job(hyperjob("hj-wait", 9))  # no node has 9 GPUs: both children wait
    wait_phase(site, "hj-run-part-0", "Running")
    wait_phase(site, "hj-run-part-1", "Running")
    page = login(browser, site, "ada")
    with page.expect_navigation():
        page.click("nav >> text=HyperJobs")
    assert page.locator("[data-testid=hyperjobs] tr[data-hyperjob='default/hj-run']").count() == 1
    assert page.locator("[data-testid=hyperjobs] tr[data-hyperjob='default/hj-wait']").count() == 1
    assert axe_violations(page) == [], "/hyperjobs"

    page.goto(site.url + "/hyperjobs/default/hj-run")
    clusters = page.locator("[data-testid=children] [data-testid=child-cluster]").all_text_contents()
    assert sorted(clusters) == ["gpu-east", "gpu-west"]  # one child on each
    assert "Submitted" in (page.text_content("[data-testid=events]") or "")
    screenshot(page, "hyperjob")
    assert axe_violations(page) == [], "/hyperjobs/default/hj-run"

    page.goto(site.url + "/hyperjobs/default/hj-wait")
    page_text = lambda: page.text_content("[data-testid=children]") or ""  # noqa: E731
    wait_for(lambda: "fits no cluster" in ((page.reload() and page_text()) or ""), 60, "the reason shown")
    assert "fits no cluster" in (page.text_content("[data-testid=waiting]") or "")

    # A child's page names its HyperJob instead of offering to cancel or delete the child alone.
    page.goto(site.url + "/jobs/default/hj-wait-part-0")
    assert page.locator("button:has-text('Cancel job')").count() == 0
    with page.expect_navigation():
        page.click("[data-testid=hyperjob] a")
    assert page.url.endswith("/hyperjobs/default/hj-wait")
    # And the hub refuses it whoever asks (here through the dashboard's API, as a script would).
    conn = http.client.HTTPConnection(urllib.parse.urlsplit(site.url).netloc, timeout=10)
    conn.request("POST", "/api/jobs/default/hj-wait-part-0/delete", headers={
        "Authorization": f"Bearer {site.token('ada')}", "Content-Length": "0"})  # fmt: skip
    answer = conn.getresponse()
    assert answer.status == 409
    assert "belongs to hyperjob default/hj-wait: delete or cancel the hyperjob" in answer.read().decode()

    # The session's buttons need its CSRF token: a forged post changes nothing.
    forged = page.request.post(site.url + "/hyperjobs/default/hj-wait/cancel", form={"csrf": "forged"})
    assert forged.status == 403 and "CSRF" in forged.text()
    with site.client("ada") as ada:
        assert ada.get_hyperjob("hj-wait").phase == "Pending"
    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation():
        page.click("button:has-text('Cancel HyperJob')")
    assert page.url.endswith("/hyperjobs/default/hj-wait")
    assert "Aborted" in (page.text_content("h1 ~ .actions") or "")
    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation():
        page.click("button:has-text('Delete HyperJob')")
    assert page.url.endswith("/hyperjobs")
    assert page.locator("tr[data-hyperjob='default/hj-wait']").count() == 0
    with site.client("ada") as ada:
        assert [h.name for h in ada.list_hyperjobs()] == ["hj-run"]
    page.context.close()

    # A viewer sees the page without the buttons.
    page = login(browser, site, "vic")
    page.goto(site.url + "/hyperjobs/default/hj-run")
    assert page.locator("[data-testid=children] tr[data-child]").count() == 2
    assert page.locator("button:has-text('HyperJob')").count() == 0
    page.context.close()


def test_login_keeps_the_whole_link_and_never_leaves_the_site(site: Site, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.goto(site.url + "/jobs?queue=training&phase=Running")
    assert page.url == site.url + "/login?next=/jobs%3Fqueue%3Dtraining%26phase%3DRunning"
    assert axe_violations(page) == [], "/login"
    page.fill("#token", site.token("ada"))
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url == site.url + "/jobs?queue=training&phase=Running"
    assert page.input_value("#f-queue") == "training"
    context.close()
    # A next that a browser would read as another site goes home instead.
    host = urllib.parse.urlsplit(site.url).netloc
    for evil in ("//evil.example/x", "/\\evil.example", "https://evil.example/", "/\t/evil.example",
                 "javascript:alert(1)", "evil.example"):  # fmt: skip
        conn = http.client.HTTPConnection(host, timeout=10)
        body = urllib.parse.urlencode({"token": site.token("ada"), "next": evil})
        conn.request("POST", "/login", body=body, headers={
            "Content-Type": "application/x-www-form-urlencoded", "Origin": site.url})  # fmt: skip
        answer = conn.getresponse()
        assert (answer.status, answer.getheader("location")) == (303, "/"), evil


def test_group_by_puts_rows_under_headers_with_counts(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        for q in ("grp-a", "grp-b"):
            ada.apply_queue(queue_manifest(q))
        ada.submit_many(
            [(job_manifest(f"grp-{q}-{i}", f"grp-{q}", gpus=0), f"grp-{q}-{i}") for q, n in (("a", 3), ("b", 2))
             for i in range(n)]
        )  # fmt: skip
    page = login(browser, site, "ada")
    page.goto(site.url + "/jobs?q=grp-&group=queue")
    rows = page.locator("[data-testid=jobs] tbody tr").evaluate_all(
        "rs => rs.map(r => [r.dataset.testid === 'group-head' ? 'head' : 'job', r.dataset.group || "
        "r.dataset.job, r.textContent.replace(/\\s+/g, ' ').trim()])"
    )
    # Grouped, the rows come by queue, each group's under its header (in name order within it).
    assert rows and rows[0][0] == "head", rows
    under: dict[str, list[str]] = {}
    for kind, key, _ in rows:
        if kind == "head":
            under[key] = []
        else:
            under[list(under)[-1]].append(key)
    assert list(under) == ["grp-a", "grp-b"]
    assert under == {
        "grp-a": ["default/grp-a-0", "default/grp-a-1", "default/grp-a-2"],
        "grp-b": ["default/grp-b-0", "default/grp-b-1"],
    }
    heads = [text for kind, _, text in rows if kind == "head"]
    assert heads[0].startswith("queue grp-a 3 jobs") and heads[1].startswith("queue grp-b 2 jobs"), heads
    assert axe_violations(page) == [], "/jobs?group=queue"
    page.context.close()


def test_the_cluster_page_says_what_its_bars_show_and_sums_vgpus_per_node(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        ada.apply_queue(queue_manifest("cards"))
        ada.submit_job(job_manifest("seven", "cards", gpus=7).replace(
            "  labels: {", "  annotations: {vglobal.io/clusters: gpu-west}\n  labels: {"))  # fmt: skip
    wait_phase(site, "seven", "Running")
    with site.client("ada") as ada:
        node = wait_for(lambda: next((p.node for p in ada.get_job("seven").placements if p.node), None), 30,
                        "the pod's node", site.system)  # fmt: skip

        def told_the_hub() -> bool:  # the agent's heartbeat after the pod started
            listed = ada.get_cluster("gpu-west").node_list
            return any(n.name == node and n.free.quantities.get("nvidia.com/gpu") == "1" for n in listed)

        wait_for(told_the_hub, 30, "the node's free GPUs reported", site.system)
    page = login(browser, site, "ada")
    page.goto(site.url + "/clusters/gpu-west?queue=cards")
    row = page.locator(f"[data-testid=nodes] tr[data-node='{node}']")
    gpu = row.locator("[data-gpu='nvidia.com/gpu']")
    assert "used 7 of 8 (1 free)" in " ".join((gpu.text_content() or "").split())
    # The bar draws what the words say.
    assert gpu.locator("svg").get_attribute("aria-label") == f"{node} nvidia.com/gpu used: 7 of 8"
    # One vGPU line per node, counted from the cards: one card is left, 10 slots of 80.
    summary = row.locator("[data-testid=vgpu] summary")
    assert " ".join((summary.text_content() or "").split()) == "vGPU slots: used 70 of 80 (10 free)"
    detail = row.locator("[data-vgpu='volcano.sh/vgpu-number']")
    assert not detail.is_visible()
    summary.click()
    assert detail.is_visible()
    page.goto(site.url + "/clusters/gpu-west?vgpu=all")
    assert page.locator("[data-testid=vgpu][open]").count() == 2  # both nodes, opened
    # The clusters' list sums the same way, in one line a cluster.
    page.goto(site.url + "/clusters")
    west = page.locator("tr[data-cluster='gpu-west'] [data-testid=vgpu] summary")
    assert " ".join(west.inner_text().split()) == "vGPU slots: used 70 of 160 (90 free)"
    assert axe_violations(page) == [], "/clusters"
    # Chips of what runs on a node stand apart.
    page.goto(site.url + "/clusters/gpu-west")
    chip = page.locator("[data-testid=runs]").first
    assert chip.evaluate("c => parseFloat(getComputedStyle(c).marginRight)") > 0
    page.goto(site.url + "/clusters/gpu-west?queue=cards")
    assert axe_violations(page) == [], "/clusters/gpu-west"
    page.context.close()
