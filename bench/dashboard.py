"""The dashboard over a big history: 1,000,000 jobs in Postgres (seeded with SQL in bulk, as
bench/e2e_seed.py does), a hub, one simulated cluster, and the dashboard process.

Measured: the /jobs first page with two filters and the overview page, sequential requests
(p50/p99 of wall time at the HTTP client); then a browser (Debian's Chromium through Playwright)
holding /jobs open while jobs run through the hub at about 500 job changes per second: the page's
main-thread busy share (Chrome's Performance.getMetrics TaskDuration) and whether it shows the
final phases when the load ends.

    python bench/dashboard.py --jobs 1000000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_procs import Postgres, free_port

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from vglobal.client import Client  # noqa: E402

CHUNK = 100_000
QUEUES = ["q0", "q1", "q2", "q3"]

# Finished copies of one submitted job: queue, namespace, phase, cluster and submitter vary by g,
# created over the last 6 days (inside the default finished-job TTL of 7 days).
JOBS = """
INSERT INTO jobs (uid, namespace, name, request_id, queue, priority_class_name, priority, min_available,
    request, gang, pod_requests, placement, manifest, phase, retry_count, tasks, placements,
    created_at, updated_at, finished_at, submitted_by, facts)
SELECT 'h-' || g, 'ns-' || (g %% 10), 'hist-' || g, 'h-' || g, 'q' || (g %% 4), t.priority_class_name,
    t.priority, t.min_available, t.request, t.gang, t.pod_requests, t.placement,
    jsonb_set(t.manifest, '{metadata,name}', to_jsonb('hist-' || g)),
    CASE WHEN g %% 7 = 0 THEN 'Failed' ELSE 'Completed' END, 0, t.tasks, t.placements,
    now() - interval '6 days' + g * (interval '6 days' / %(rows)s),
    now() - interval '6 days' + g * (interval '6 days' / %(rows)s) + interval '30 s',
    now() - interval '6 days' + g * (interval '6 days' / %(rows)s) + interval '30 s',
    'user-' || (g %% 20), t.facts
FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS g, (SELECT * FROM jobs WHERE uid = %(uid)s) AS t
"""

BINDINGS = """
INSERT INTO resource_bindings (job_uid, phase, cluster, generation, resources, attempts, reason,
    waiting_since, dispatched_at, finished_at, updated_at)
SELECT j.uid, CASE WHEN j.phase = 'Failed' THEN 'Failed' ELSE 'Succeeded' END, 'sim', 1, t.resources, 0,
    'job ' || j.phase, j.created_at, j.created_at + interval '1 s', j.finished_at, j.finished_at
FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS g
JOIN jobs j ON j.uid = 'h-' || g,
    (SELECT * FROM resource_bindings WHERE job_uid = %(uid)s) AS t
"""


def job(name: str, queue: str, duration: str = "1s") -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  queue: {queue}
  minAvailable: 1
  tasks:
  - name: t
    replicas: 1
    template:
      metadata: {{annotations: {{vglobal.io/sim-duration: {duration}}}}}
      spec:
        containers: [{{name: c, image: x, resources: {{requests: {{cpu: 100m}}}}}}]
"""


def seed(url: str, rows: int, uid: str) -> None:
    """Triggers off while seeding (the change log and dispatch history would hold the same
    million rows again, and the watch would stream them); the job counts are rebuilt after."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        for lo in range(0, rows, CHUNK):
            t = time.time()
            params = {"lo": lo, "hi": min(rows, lo + CHUNK) - 1, "uid": uid, "rows": rows}
            with conn.transaction():
                conn.execute(JOBS, params)
                conn.execute(BINDINGS, params)
            print(f"  seeded {min(rows, lo + CHUNK):,} jobs ({time.time() - t:.1f} s)", flush=True)
        conn.execute("SET session_replication_role = DEFAULT")
        conn.execute("SELECT rebuild_job_counts()")
        for table in ("jobs", "resource_bindings", "job_counts"):
            conn.execute(f"VACUUM ANALYZE {table}")


def timed(url: str, n: int) -> tuple[float, float, int]:
    """p50 and p99 in ms of ``n`` requests in a row, and how many failed (a hub call timing out
    makes the dashboard answer 502)."""
    took, failed = [], 0
    for _ in range(n):
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                r.read()
                # a page that sent us to log in was not served: counted failed, not timed as one
                if urllib.parse.urlsplit(r.geturl()).path == "/login":
                    failed += 1
        except urllib.error.HTTPError:
            failed += 1
        took.append(time.perf_counter() - t)
    q = statistics.quantiles(took, n=100)
    return q[49] * 1000, q[98] * 1000, failed


def hub_calls(hub: Client, n: int) -> None:
    """The hub's calls behind those pages, straight through the SDK (no dashboard cache)."""
    from datetime import UTC, datetime, timedelta

    day = datetime.now(UTC) - timedelta(days=1)
    calls: dict[str, Any] = {
        "ListJobs(queue=q1, phase=Failed), 50": lambda: hub.job_page(50, queue="q1", phase="Failed"),
        "ListJobs(queue=q2, namespace=ns-4, created desc), 50": lambda: hub.job_page(
            50, queue="q2", namespace="ns-4", sort_by="created", descending=True
        ),
        "CountJobs(phase) over all": lambda: hub.count_jobs(["phase"]),
        "CountJobs(phase; queue=q1, phase=Failed)": lambda: hub.count_jobs(["phase"], queue="q1", phase="Failed"),
        "CountJobs(phase; finished in the last day)": lambda: hub.count_jobs(["phase"], finished_after=day),
        "CountJobs(queue, cluster, phase) over all": lambda: hub.count_jobs(["queue", "cluster", "phase"]),
        "ListQueues": hub.list_queues,
        "ListClusters": hub.list_clusters,
    }
    for label, call in calls.items():
        call()
        took = []
        for _ in range(n):
            t = time.perf_counter()
            call()
            took.append(time.perf_counter() - t)
        q = statistics.quantiles(took, n=100)
        print(f"hub: {label:55s} p50 {q[49] * 1000:6.1f} ms  p99 {q[98] * 1000:6.1f} ms", flush=True)


def spawn(args: list[str], log: Path) -> Any:
    import subprocess

    return subprocess.Popen([sys.executable, "-m", "vglobal", *args], stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, cwd=ROOT)  # fmt: skip


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer")


def live(base: str, hub: Client, seconds: float, rate: float) -> dict[str, Any]:
    """Jobs through the hub at ``rate`` submissions a second (each makes about four changes: added,
    dispatched, running, completed) while a browser holds /jobs?queue=live open."""
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
    total = int(seconds * rate)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(base + "/jobs?queue=live&sort=name&size=50")
        page.wait_for_selector("#results[data-connected=yes]")
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")

        def busy() -> float:
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            return float(metrics["TaskDuration"])

        start_busy, start = busy(), time.monotonic()
        per_second: list[float] = []  # busy share of each second of the load
        mark_b, mark_t = start_busy, start
        sent = 0
        while sent < total:
            # Paced by the clock, not per call: a slow batch makes the next one bigger, so the
            # asked rate holds even where one call takes longer than its tenth of a second.
            due = min(total, int((time.monotonic() - start) * rate) + 1)
            if due > sent:
                batch = range(sent, due)
                hub.submit_jobs([(job(f"live-{i:05d}", "live"), f"live-{i}") for i in batch])
                sent = due
            page.wait_for_timeout(max(0.0, start + sent / rate - time.monotonic()) * 1000)
            if time.monotonic() - mark_t >= 1.0:
                b, now = busy(), time.monotonic()
                per_second.append((b - mark_b) / (now - mark_t))
                mark_b, mark_t = b, now
        load_seconds = time.monotonic() - start
        load_busy = (busy() - start_busy) / load_seconds
        # The final phases: every job finished on the hub, and the open page shows them so.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            counts = {g.phase: g.count for g in hub.count_jobs(["phase"], queue="live").groups}
            if counts.get("Completed", 0) == sent:
                break
            time.sleep(1)
        settled = time.monotonic()
        page.wait_for_function(
            "() => { const c = [...document.querySelectorAll('[data-testid=phase]')];"
            " return c.length === 50 && c.every(x => x.textContent === 'Completed'); }",
            timeout=60_000,
        )
        lag = time.monotonic() - settled
        # The counts part refreshes on its own clock (at most every 2 s): the final total follows.
        page.wait_for_function(
            f"() => document.querySelector('[data-testid=total]')?.textContent === '{sent}'",
            timeout=60_000,
        )
        total_lag = time.monotonic() - settled
        shown = page.locator("[data-testid=total]").text_content()
        refreshed = page.get_attribute("#results", "data-refreshed")
        browser.close()
    return {
        "jobs": sent, "load_seconds": round(load_seconds, 1), "busy_share": round(load_busy, 3),
        "worst_second_busy_share": round(max(per_second, default=0.0), 3), "shown_total": shown,
        "hub_completed": counts.get("Completed", 0), "refreshes": refreshed,
        "final_phases_shown_after_s": round(lag, 2), "final_total_shown_after_s": round(total_lag, 2),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--live-seconds", type=float, default=20)
    ap.add_argument("--live-rate", type=float, default=125, help="submissions/s (about 4 changes each)")
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="vglobal-dash-"))
    work.mkdir(parents=True, exist_ok=True)
    pg = Postgres(work / "pgdata")
    procs: list[Any] = []
    try:
        url = pg.fresh_database("dash")
        hub_addr, web = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
        cluster = work / "sim.yaml"
        cluster.write_text(
            "apiVersion: vglobal.io/v1alpha1\nkind: SimCluster\nmetadata: {name: sim}\nspec:\n  nodeGroups:\n"
            "  - {name: n, count: 50, allocatable: {cpu: '64', memory: 256Gi, pods: '110'}}\n"
        )
        procs.append(spawn(["hub", "--listen", hub_addr, "--database-url", url, "--rate-limit", "0",
                            "--dispatch-interval", "200ms"], work / "hub.log"))  # fmt: skip
        with Client(hub_addr, timeout=60) as hub:
            deadline = time.monotonic() + 60
            while True:
                try:
                    hub.list_queues()
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)
            for q in [*QUEUES, "live"]:
                hub.apply_queue(f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {q}}}\n"
                                "spec: {weight: 1}\n")  # fmt: skip
            uid = hub.submit_job(job("template", "q0", "1s")).job.uid
            procs.append(spawn(["--hub", hub_addr, "agent", "--sim", str(cluster)], work / "agent.log"))
            while hub.get_job("template").phase != "Completed":
                time.sleep(0.3)
            t = time.time()
            seed(url.replace("postgresql+psycopg://", "postgresql://"), a.jobs, uid)
            print(f"seeded {a.jobs:,} jobs in {time.time() - t:.0f} s", flush=True)
            # the hub here takes no tokens: the dashboard serves it on loopback without a login
            procs.append(spawn(["--hub", hub_addr, "dashboard", "--listen", web, "--no-login"], work / "dashboard.log"))
            base = f"http://{web}"
            wait_http(base + "/healthz")
            # Each page, then the part it loads after its first paint (the counts over every job).
            pages = {
                "/jobs?queue=q1&phase=Failed": "jobs page, two filters",
                "/jobs-counts?queue=q1&phase=Failed": "  its counts",
                "/jobs?queue=q2&namespace=ns-4&sort=-created": "jobs page, two filters, newest first",
                "/jobs-counts?queue=q2&namespace=ns-4": "  its counts",
                "/jobs?q=hist-12345&by=user-5": "jobs page, name contains + submitted by",
                "/": "overview page",
                "/overview-jobs": "  its job figures",
                "/overview-queues": "  its queues",
            }
            for path, label in pages.items():
                timed(base + path, 5)  # warm
                p50, p99, failed = timed(base + path, a.requests)
                print(f"{label:40s} {path:45s} p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  failed {failed}", flush=True)
            hub_calls(hub, a.requests)
            result = live(base, hub, a.live_seconds, a.live_rate)
            print(f"live: {result}", flush=True)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
        pg.stop()


if __name__ == "__main__":
    main()
