"""Backpressure from outside: one caller floods SubmitJob far over its rate limit while another submits
at a modest rate, agents keep their streams and a user reads the dashboard.

    .venv/bin/python bench/flood.py [--seconds 20] [--flood-concurrency 64] [--quiet-rate 10]
        [--rate-limit 100 --rate-burst 500]   # lower them where the flooder cannot outrun 100/s
        [--rounds 3]                          # quiet and flood rounds alternated, samples pooled
        [--flood-rate 20]                     # the flooder sends this many calls/s instead (open
                                              # loop): at the rate limit, the work admitted alone
        [--code DIR] [--hub-flag=--calls-in-flight=0]  # a baseline tree, more hub flags

A hub as a user runs it (TLS, an auth config with two users, `vglobal certs init`; by default the
hub's default rate limit, 100 calls/s per principal with a burst of 500), two simulated agents on mTLS, and
`vglobal dashboard` in front of it. Two rounds of --seconds each, quiet then flood:
- the quiet caller ("bench") sends a SubmitJob every 1/--quiet-rate s (one at a time: a call that
  returns late delays the next; the latency is the call's own) and reads the dashboard's overview page (as itself) every 0.5 s;
- in the flood round, the flooding caller ("flood") keeps --flood-concurrency SubmitJob calls in
  flight (bench/e2e_load.py, a process of its own): most are refused RESOURCE_EXHAUSTED with a
  retry delay;
- the agents' heartbeats as the hub records them (the oldest, sampled every 0.5 s).
With --rounds N the quiet and flood rounds alternate N times and each kind's samples are pooled, so
the machine's load drifting (other work on the same cores) weighs on both alike.
Pass: the quiet caller's submit p99 and the dashboard's p99 during the flood within 2x of the quiet
round's (or under 50 ms and 200 ms), no quiet call refused, and no heartbeat older than 3 intervals.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from e2e_procs import CODE, Postgres, Proc, System, free_port, spawn  # noqa: E402

from vglobal.client import Client, VGlobalError  # noqa: E402

HEARTBEAT = 5.0  # the hub's default --heartbeat-interval
MANIFEST = (
    '{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","metadata":{"name":"%s",'
    '"annotations":{"vglobal.io/sim-duration":"1s"}},"spec":{"minAvailable":1,"tasks":[{"name":"t",'
    '"replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"x",'
    '"resources":{"requests":{"cpu":"1"}}}]}}}]}}'
)


def p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else float("nan")


class Round:
    """The quiet caller's submits, dashboard reads and the agents' heartbeat ages over one round."""

    def __init__(self, system: System, dashboard: str, token: str, seconds: float, rate: float, tag: str) -> None:
        self.system, self.dashboard, self.token = system, dashboard, token
        self.seconds, self.rate, self.tag = seconds, rate, tag
        self.submit: list[float] = []
        self.refused: Counter[str] = Counter()
        self.pages: list[float] = []
        self.page_errors = 0
        self.heartbeat_age = 0.0
        self.hub_cpu = 0.0  # the hub's CPU seconds over the round
        self.wall = 0.0

    def run(self) -> None:
        assert self.system.hub is not None
        cpu, wall = self.system.hub.cpu_seconds(), time.monotonic()
        threads = [threading.Thread(target=f, daemon=True) for f in (self.submits, self.reads, self.beats)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.hub_cpu = self.system.hub.cpu_seconds() - cpu
        self.wall = time.monotonic() - wall

    def submits(self) -> None:
        with Client(dial=self.system.dial(), timeout=30, retries=1) as c:
            start = time.monotonic()
            for i in range(int(self.seconds * self.rate)):
                due = start + i / self.rate
                time.sleep(max(0.0, due - time.monotonic()))
                sent = time.monotonic()
                try:
                    c.submit_job(MANIFEST % f"{self.tag}-{i}", request_id=f"{self.tag}-{i}")
                    self.submit.append(time.monotonic() - sent)
                except VGlobalError as exc:
                    self.refused[exc.code.name] += 1

    def reads(self) -> None:
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline:
            req = urllib.request.Request(self.dashboard + "/", headers={"Authorization": f"Bearer {self.token}"})
            t = time.monotonic()
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    resp.read()
                self.pages.append(time.monotonic() - t)
            except OSError:
                self.page_errors += 1
            time.sleep(0.5)

    def beats(self) -> None:
        deadline = time.monotonic() + self.seconds
        with Client(dial=self.system.dial(), timeout=30, retries=1) as c:
            while time.monotonic() < deadline:
                now = time.time()
                for cl in c.list_clusters():
                    self.heartbeat_age = max(self.heartbeat_age, now - cl.last_heartbeat.ToSeconds())
                time.sleep(0.5)

    def add(self, other: Round) -> None:
        """``other``'s samples pooled into this round's."""
        self.submit += other.submit
        self.refused += other.refused
        self.pages += other.pages
        self.page_errors += other.page_errors
        self.heartbeat_age = max(self.heartbeat_age, other.heartbeat_age)
        self.hub_cpu += other.hub_cpu
        self.wall += other.wall

    def line(self) -> str:
        return (
            f"{self.tag:6} quiet submit p50 {p(self.submit, 50) * 1000:6.1f} ms p99 {p(self.submit, 99) * 1000:6.1f} ms "
            f"refused {sum(self.refused.values())} | dashboard p50 {p(self.pages, 50) * 1000:6.1f} ms "
            f"p99 {p(self.pages, 99) * 1000:6.1f} ms errors {self.page_errors} | oldest heartbeat {self.heartbeat_age:.1f} s"
            f" | hub CPU {self.hub_cpu / max(self.wall, 1e-9):.2f} cores"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--flood-concurrency", type=int, default=64)
    ap.add_argument("--quiet-rate", type=float, default=10.0)
    ap.add_argument("--flood-rate", type=float, default=0.0, help="the flooder's calls/s, open loop (0: closed loop)")
    ap.add_argument("--rate-limit", default="100", help="the hub's --rate-limit (per principal, calls/s)")
    ap.add_argument("--rate-burst", default="500", help="the hub's --rate-burst")
    ap.add_argument("--keep", default="")
    ap.add_argument("--rounds", type=int, default=1, help="quiet and flood rounds, alternated")
    ap.add_argument("--code", default="", help="run hub, agents and dashboard from this source tree (a baseline)")
    ap.add_argument("--hub-flag", action="append", default=[], help="more hub flags (--hub-flag=--calls-in-flight=0)")
    args = ap.parse_args()
    if args.code:
        CODE[0] = Path(args.code).resolve()
    from vglobal.cli.certs import UserSpec, init_certs

    work = Path(args.keep or tempfile.mkdtemp(prefix="vglobal-flood-"))
    work.mkdir(parents=True, exist_ok=True)
    certs = work / "certs"
    init_certs(certs, "localhost", ["c0", "c1"], [UserSpec.parse("bench:admin"), UserSpec.parse("flood:admin")], days=1)
    pg = Postgres(work / "pgdata")
    limits = ["--rate-limit", args.rate_limit, "--rate-burst", args.rate_burst]
    system = System(pg.fresh_database("flood"), work, hub_flags=[*limits, *args.hub_flag], certs=certs)
    procs: list[Proc] = []
    try:
        system.start_hub()
        system.start_agents(2, 10, 110, [])
        web = f"127.0.0.1:{free_port()}"
        procs.append(spawn("dashboard", [*system.dial_args(), "dashboard", "--listen", web], work))
        dashboard = f"http://{web}"
        token = (certs / "token-bench").read_text().strip()
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(dashboard + "/healthz", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        with Client(dial=system.dial(), timeout=30) as c:
            while len(c.list_clusters()) < 2:
                time.sleep(0.5)
        quiet = Round(system, dashboard, token, 0, args.quiet_rate, "quiet")
        flooded = Round(system, dashboard, token, 0, args.quiet_rate, "flood")
        records: list[list[object]] = []
        span = 0.0
        flood_dial = ["--hub", system.target, "--ca-file", str(certs / "ca.crt"), "--token-file", str(certs / "token-flood")]
        for k in range(args.rounds):
            one = Round(system, dashboard, token, args.seconds, args.quiet_rate, f"quiet{k}")
            one.run()
            print(one.line(), flush=True)
            quiet.add(one)
            out = work / f"flood-{k}.json"
            procs.append(spawn(f"load-flood-{k}", [str(BENCH / "e2e_load.py"), *flood_dial, "--prefix", f"flood{k}",
                                                   "--count", "10000000", "--concurrency", str(args.flood_concurrency),
                                                   "--seconds", str(args.seconds + 5), "--out", str(out),
                                                   *(["--rate", str(args.flood_rate), "--count", str(int(args.flood_rate * (args.seconds + 5)))] if args.flood_rate else [])],
                                work, module=False))  # fmt: skip
            time.sleep(3)  # the flood's process up and its burst spent
            one = Round(system, dashboard, token, args.seconds, args.quiet_rate, f"flood{k}")
            one.run()
            print(one.line(), flush=True)
            flooded.add(one)
            procs[-1].popen.wait(timeout=120)
            these = json.loads(out.read_text())
            records += these
            span += max(r[3] for r in these) - min(r[1] for r in these)
        print(quiet.line())
        print(flooded.line())
        codes = Counter(r[4] for r in records)
        print(f"flooder: {len(records) / span:,.0f} calls/s sent, {codes['OK'] / span:,.0f}/s stored, "
              f"{codes['RESOURCE_EXHAUSTED'] / span:,.0f}/s RESOURCE_EXHAUSTED, others {dict(codes - Counter({'OK': codes['OK'], 'RESOURCE_EXHAUSTED': codes['RESOURCE_EXHAUSTED']}))}")  # fmt: skip
        extra = flooded.hub_cpu / max(flooded.wall, 1e-9) - quiet.hub_cpu / max(quiet.wall, 1e-9)
        print(f"the flood's cost to the hub: {extra:.2f} cores, {extra / max(len(records) / span, 1e-9) * 1e6:,.0f} "
              "CPU us per flooder call")  # fmt: skip
        checks = {
            "quiet submit p99 within 2x": p(flooded.submit, 99) <= max(2 * p(quiet.submit, 99), 0.05),
            "dashboard p99 within 2x": p(flooded.pages, 99) <= max(2 * p(quiet.pages, 99), 0.2),
            "no quiet call refused": not flooded.refused and flooded.page_errors == 0,
            # An open-loop flooder at its rate is no flood: the work admitted alone is measured.
            "the flood was refused": codes["RESOURCE_EXHAUSTED"] > 0 or args.flood_rate > 0,
            "heartbeats kept": flooded.heartbeat_age < 3 * HEARTBEAT,
        }
        ok = all(checks.values())
        print(("PASS: " if ok else "FAIL: ") + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in checks.items()))
    finally:
        for proc in procs:
            proc.stop()
        system.stop()
        pg.stop(keep_data=bool(args.keep))  # logs stay; the database goes unless asked to keep
    print(f"logs in {work}")


if __name__ == "__main__":
    main()
