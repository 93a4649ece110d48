"""Every page of the dashboard in a real browser against a real hub with simulated clusters: real
data on each page, the jobs table's filters, sort, group-by and paging, a phase changing on an open
page without reload, operators' actions, and no serious accessibility violation (axe-core)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.dashboard_site import (
    Site,
    apply_files,
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
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_every_page_shows_real_data_and_passes_axe(site: Site, browser: Any) -> None:
    apply_files(site, "ada", EXAMPLES / "queues.yaml", EXAMPLES / "jobflow-diamond.yaml", EXAMPLES / "cronjob.yaml")
    with site.client("ada") as ada:
        ada.submit_job(job_manifest("llm-finetune", "training", gpus=4))
        ada.submit_job(job_manifest("quick-eval", "research", duration="1s"))
        ada.submit_job(job_manifest("bad-run", "research", duration="1s", gpus=1).replace(
            "sim-duration: 1s", 'sim-duration: 1s, vglobal.io/sim-exit-code: "3"'))  # fmt: skip
    wait_phase(site, "llm-finetune", "Running")
    wait_phase(site, "quick-eval", "Completed")
    wait_phase(site, "bad-run", "Failed")
    page = login(browser, site, "ada")
    checks = {
        "/": ["gpu-east", "training", "bad-run"],
        "/jobs": ["llm-finetune", "quick-eval", "bad-run"],
        "/jobs/default/llm-finetune": ["gpu-", "Dispatched", "ada", "queue: training"],
        "/queues": ["training", "research"],
        "/clusters": ["gpu-east", "gpu-west"],
        "/clusters/gpu-east": ["gpu-east-0", "nvidia.com/gpu"],
        "/clusters/gpu-west": ["NVIDIA-A100-SXM4-80GB", "HyperNodes", "gpu-west-r1"],
        "/cronjobs": ["eval-latest", "*/2 * * * *"],
        "/jobflows": ["bakeoff", "fetch", "compare"],
    }
    for path, texts in checks.items():
        page.goto(site.url + path)
        if path in ("/", "/jobs"):  # their counts arrive just after the page
            page.wait_for_selector("[data-testid=total]")
        if path == "/":
            page.wait_for_selector("#overview-queues table")
        body = page.text_content("main") or ""
        if path == "/jobs/default/llm-finetune":
            page.click("text=Show the manifest as YAML")
            body += page.text_content("pre.yaml") or ""
        for text in texts:
            assert text in body, f"{path} lacks {text!r}"
        if path == "/clusters/gpu-west":  # a spine above two racks
            tiers = page.locator("[data-testid=hypernodes] tbody tr").all_text_contents()
            assert len(tiers) == 3, tiers
        name = {"/": "overview", "/jobs/default/llm-finetune": "job"}.get(path, path.strip("/").replace("/", "-"))
        screenshot(page, name)
        assert axe_violations(page) == [], path
    # The overview's numbers are the hub's (the JobFlow's steps finish too, so ask it).
    with site.client("ada") as ada:
        since = datetime.now(UTC) - timedelta(hours=1)
        done = {g.phase: g.count for g in ada.count_jobs(["phase"], finished_after=since).groups}
    page.goto(site.url + "/")
    page.wait_for_selector("[data-testid=total]")
    assert done.get("Failed") == 1
    finished = done.get("Completed", 0) + done.get("Failed", 0) + done.get("Aborted", 0)
    assert f"{done['Completed']} of {finished} finished" in (page.text_content("main") or "")
    page.context.close()


def test_jobs_filters_sort_group_and_paging(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        for q in ("filt-a", "filt-b"):
            ada.apply_queue(queue_manifest(q))
        ada.submit_many(
            [(job_manifest(f"sweep-{i:02d}", "filt-a", duration="1h", gpus=0,
                           labels={"sweep": "lr" if i % 2 else "bs"}), f"sweep-{i}") for i in range(30)]
            + [(job_manifest(f"other-{i}", "filt-b", duration="1h", gpus=0), f"other-{i}") for i in range(3)]
        )  # fmt: skip
    page = login(browser, site, "ada")
    page.goto(site.url + "/jobs?queue=filt-a&sort=name&size=25")
    names = page.locator("[data-testid=jobs] tbody tr td:nth-child(2)").all_text_contents()
    assert names == [f"sweep-{i:02d}" for i in range(25)]
    assert page.text_content("[data-testid=total]") == "30"
    kinds = page.locator("[data-testid=jobs] tbody tr td:nth-child(4)").all_text_contents()
    assert set(kinds) == {"VolcanoJob"}, kinds
    with page.expect_navigation():
        page.click("text=Next page »")
    assert "page=" in page.url and "queue=filt-a" in page.url
    names = page.locator("[data-testid=jobs] tbody tr td:nth-child(2)").all_text_contents()
    assert names == [f"sweep-{i:02d}" for i in range(25, 30)]
    page.goto(site.url + "/jobs?queue=filt-a&sort=-name&q=weep-1&label=sweep%3Dlr")
    names = page.locator("[data-testid=jobs] tbody tr td:nth-child(2)").all_text_contents()
    assert names == ["sweep-19", "sweep-17", "sweep-15", "sweep-13", "sweep-11"]
    # Sorting by a column header keeps the filters in the URL.
    page.goto(site.url + "/jobs?q=other")
    with page.expect_navigation():
        page.click("[data-testid=jobs] thead >> text=Name")
    assert "sort=name" in page.url and "q=other" in page.url
    with page.expect_navigation():
        page.click("[data-testid=jobs] thead >> text=Name")
    assert "sort=-name" in page.url
    assert page.locator("[data-testid=jobs] tbody tr td:nth-child(2)").all_text_contents() == [
        "other-2", "other-1", "other-0"]  # fmt: skip
    # The filter form writes the same query string.
    page.goto(site.url + "/jobs")
    page.fill("#f-queue", "filt-b")
    page.select_option("#f-group", "queue")
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    assert "queue=filt-b" in page.url and "group=queue" in page.url
    group = page.locator("[data-testid=groups] tr[data-group='filt-b']")
    assert "3" in group.locator("td.num").text_content()
    page.goto(site.url + "/jobs?group=queue&q=sweep-")
    assert page.locator("[data-testid=groups] tr[data-group='filt-a'] td.num").text_content() == "30"
    screenshot(page, "jobs-grouped")
    page.goto(site.url + "/jobs?size=7")
    assert "size: one of" in (page.text_content("main") or "")
    page.context.close()


def test_a_phase_changes_on_the_open_page_without_reload(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        ada.apply_queue(queue_manifest("live-a"))
        ada.close_queue("live-a")
    page = login(browser, site, "ada")
    page.goto(site.url + "/jobs?queue=live-a")
    page.wait_for_selector("#results[data-connected=yes]")
    page.evaluate("window.__notReloaded = true")
    with site.client("ada") as ada:
        ada.open_queue("live-a")
        ada.submit_job(job_manifest("live-1", "live-a", duration="3s", gpus=0))
    row = page.locator("[data-job='default/live-1'] [data-testid=phase]")
    row.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => document.querySelector(\"[data-job='default/live-1'] [data-testid=phase]\")?.textContent === 'Completed'",
        timeout=60_000,
    )
    # The counts follow on their own clock and end at the last change, never at a cached earlier one.
    page.wait_for_function(
        "() => /Completed 1\\b/.test(document.querySelector('#counts')?.textContent || '')",
        timeout=30_000,
    )
    assert page.evaluate("window.__notReloaded") is True
    # And on the job's own page.
    with site.client("ada") as ada:
        ada.submit_job(job_manifest("live-2", "live-a", duration="4s", gpus=0))
    page.goto(site.url + "/jobs/default/live-2")
    page.wait_for_selector("#summary[data-connected=yes]")
    page.evaluate("window.__notReloaded = true")
    page.wait_for_function(
        "() => document.querySelector('#summary .phase')?.textContent === 'Completed'", timeout=60_000
    )
    assert page.evaluate("window.__notReloaded") is True
    page.context.close()


def test_operators_manage_queues_and_clusters_from_the_pages(site: Site, browser: Any) -> None:
    page = login(browser, site, "olga")
    page.goto(site.url + "/queues")
    page.fill("#c-name", "ops-made")
    page.fill("#c-weight", "5")
    page.fill("#c-capability-3", "8")
    # Each button posts a form and the answer redirects back: read the page only once the
    # redirect has loaded, or the old page's text (or a reload racing it) is what we see.
    with page.expect_navigation():
        page.click("button:has-text('Create')")
    row = page.locator("tr[data-queue='ops-made']")
    assert "5" in row.locator("td").nth(1).text_content()
    assert "Open" in row.locator("[data-testid=state]").text_content()
    with page.expect_navigation():
        row.locator("button:has-text('Close')").click()
    assert "Closed" in page.locator("tr[data-queue='ops-made'] [data-testid=state]").text_content()
    with site.client("ada") as ada:
        assert ada.get_queue("ops-made").state == "Closed"
    page.goto(site.url + "/clusters/gpu-west")
    with page.expect_navigation():
        page.click("button:has-text('Cordon')")
    assert "Cordoned" in (page.text_content("h1") or "")
    with page.expect_navigation():
        page.click("button:has-text('Uncordon')")
    wait_for(lambda: "Cordoned" not in ((page.reload() and page.text_content("h1")) or ""), 20, "uncordoned")
    page.context.close()
    # alice (a submitter) sees no such buttons.
    page = login(browser, site, "alice")
    page.goto(site.url + "/clusters/gpu-west")
    assert page.locator("button:has-text('Cordon')").count() == 0
    page.goto(site.url + "/queues")
    assert page.locator("#c-name").count() == 0
    page.context.close()


def test_the_cluster_page_shows_what_runs_on_each_node_and_hypernode(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        ada.apply_queue(queue_manifest("topo"))
        manifest = job_manifest("topo-run", "topo", gpus=0).replace(
            "  labels: {", "  annotations: {vglobal.io/clusters: gpu-west}\n  labels: {"
        ).replace("replicas: 1", "replicas: 2")
        ada.submit_job(manifest)
    wait_phase(site, "topo-run", "Running")
    with site.client("ada") as ada:
        # Where the hub says the pods are: what the page must show.
        pods = wait_for(lambda: [p for p in ada.get_job("topo-run").placements if p.node] or None, 30,
                        "the pods' nodes", site.system)  # fmt: skip
    per_node: dict[str, int] = {}
    for p in pods:
        per_node[p.node] = per_node.get(p.node, 0) + 1
    assert sum(per_node.values()) == 2
    page = login(browser, site, "ada")
    # Other tests' jobs run there too: the queue filter shows this one's alone.
    page.goto(site.url + "/clusters/gpu-west")
    page.fill("#f-queue", "topo")
    with page.expect_navigation():
        page.click("text=Show")
    assert "queue=topo" in page.url
    for node in (page.locator("[data-testid=nodes] tbody tr").evaluate_all("rs => rs.map(r => r.dataset.node)")):
        cell = page.locator(f"[data-testid=nodes] tr[data-node='{node}'] td").last.text_content() or ""
        n = per_node.get(node, 0)
        assert (f"topo-run \u00d7{n}" in cell) if n else cell.strip() == "-", (node, cell)
    # Each HyperNode counts the pods on the nodes below it (its "Nodes below" cell lists them).
    rows = page.locator("[data-testid=hypernodes] tbody tr").all()
    assert len(rows) == 3  # a spine above two racks, the spine first
    for i, row in enumerate(rows):
        cells = row.locator("td").all_text_contents()
        below = [n.strip() for n in cells[3].split(",")]
        n = sum(per_node.get(node, 0) for node in below)
        if i == 0:
            assert n == 2, cells  # both pods are below the spine
        shown = cells[-1].strip()
        assert shown == (f"{n} pod{'s' if n != 1 else ''}: topo-run \u00d7{n}" if n else "-"), cells
    with page.expect_navigation():
        page.click("[data-testid=nodes] >> text=topo-run")
    assert page.url.endswith("/jobs/default/topo-run")
    page.goto(site.url + "/clusters/gpu-west?queue=topo")
    screenshot(page, "clusters-gpu-west")
    assert axe_violations(page) == []
    page.context.close()


TALKER = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: panel-talker}
spec:
  queue: logs
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      metadata:
        annotations: {vglobal.io/sim-log: "warming up", vglobal.io/sim-log-interval: 400ms}
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_the_job_pages_log_panel_follows_new_lines_without_reload(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        ada.apply_queue(queue_manifest("logs"))
        ada.submit_job(TALKER)
    wait_phase(site, "panel-talker", "Running")
    page = login(browser, site, "ada")
    page.goto(site.url + "/jobs/default/panel-talker")
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=log-lines]')?.textContent || '').includes('warming up')",
        timeout=30_000,
    )
    page.evaluate("window.__notReloaded = true")
    last = page.locator("[data-testid=log-lines] div").last.text_content() or ""
    k = int(last.rsplit(" ", 1)[1]) if ": step " in last else 0
    # Two lines the pod writes after the panel opened arrive on it.
    page.wait_for_function(
        f"() => (document.querySelector('[data-testid=log-lines]')?.textContent || '').includes(': step {k + 2}')",
        timeout=30_000,
    )
    assert page.evaluate("window.__notReloaded") is True
    assert page.text_content("[data-testid=log-state]") == "following"
    lines = page.locator("[data-testid=log-lines] div").all_text_contents()
    assert lines[0] == "[panel-talker-main-0] warming up", lines[:2]
    assert len(lines) == len(set(lines)), lines  # nothing twice
    assert axe_violations(page) == []
    page.context.close()
    # The stream is the hub's StreamLogs as the caller: a viewer of other queues reads nothing.
    status, body, _ = site.get("/jobs/default/panel-talker/logs", token=site.token("vera"))
    assert status == 200 and body.startswith("event: gone") and "event: line" not in body, body[:300]
    status, body, _ = site.get("/jobs/default/panel-talker/logs?tail=1&pod=nope", token=site.token("ada"))
    assert "event: gone" in body and "panel-talker-main-0" in body, body[:300]


MIXED = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: pods-mixed}
spec:
  queue: pods
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      metadata: {annotations: {vglobal.io/sim-duration: 1h}}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
  - name: prep
    replicas: 1
    template:
      metadata: {annotations: {vglobal.io/sim-duration: 1s}}
      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
"""


def test_the_pods_page_filters_and_sorts(site: Site, browser: Any) -> None:
    with site.client("ada") as ada:
        ada.apply_queue(queue_manifest("pods"))
        ada.submit_job(MIXED)
        ada.submit_job(job_manifest("pods-beta", "pods", namespace="pods-ns", gpus=0))
        wait_for(
            lambda: {p.phase for p in ada.get_job("pods-mixed").placements} == {"Running", "Succeeded"}
            and ada.get_job("pods-beta", "pods-ns").phase == "Running",
            60,
            "the pods running and the prep pod done",
            site.system,
        )
    page = login(browser, site, "ada")
    page.click("nav >> text=Pods")
    page.wait_for_url(site.url + "/pods")

    def shown() -> list[str]:
        return [r.get_attribute("data-pod") or "" for r in page.locator("[data-testid=pod-list] tbody tr[data-pod]").all()]

    assert {"default/pods-mixed-main-0", "default/pods-mixed-prep-0", "pods-ns/pods-beta-worker-0"} <= set(shown())
    # Fuzzy: the letters in order, not a substring.
    page.fill("#f-q", "pdsbta")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_url("**/pods?*")
    assert shown() == ["pods-ns/pods-beta-worker-0"]
    page.fill("#f-q", "")
    page.select_option("#f-namespace", "default")
    page.select_option("#f-status", "Succeeded")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_url("**status=Succeeded**")
    assert shown() == ["default/pods-mixed-prep-0"]
    page.select_option("#f-status", "")
    page.select_option("#f-namespace", "")
    page.select_option("#f-sort", "-name")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_url("**sort=-name**")
    names = [p.split("/", 1)[1] for p in shown()]
    assert len(names) >= 3 and names == sorted(names, reverse=True), names
    screenshot(page, "pods")
    assert axe_violations(page) == []
    page.context.close()
