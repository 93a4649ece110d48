"""How well the hub's predicted starts match the starts that happen: the Philly trace replayed.

    .venv/bin/python bench/forecast_accuracy.py [--limit N] [--scale 0.25] [--sample-every 21600]

The trace is replayed through admit() as bench/philly.py's "fair-noreclaim" policy does (fair share,
gangs, one cluster of the VCs' nodes times --scale). Every --sample-every virtual seconds the
replay stops and the forecast the hub's leader makes (vglobal/admission/forecast.py) is run on the
state of that moment: running jobs end at their start plus the expected duration, and waiting ones
run for it, where the expected duration is what the hub would know — the median run time of the
jobs of the same VC completed so far (Philly jobs carry no names, so no name stems). Each job is
judged on the first sample taken while it waits: its predicted start against the start the replay
then gives it. The naive baseline predicts a wait of (jobs ahead of it in its VC's queue) x (the
VC's median run time). Reported: the median absolute error over jobs that waited over 5 minutes,
for both, and how many the forecast could not tell ("unknown": scored as the baseline's guess).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from philly import DATA, Run, TraceJob, load

from vglobal.admission.forecast import forecast
from vglobal.sim.traces import TraceMissing, need

WAITED = 300.0  # jobs that waited longer than this are judged


@dataclass
class Judged:
    predicted: float | None
    baseline: float
    sampled_at: float


@dataclass
class SampledRun(Run):
    sample_every: float = 21600.0
    max_cycles: int = 200
    coalesce: float = 0.1
    max_step: float = 300.0
    judged: dict[str, Judged] = field(default_factory=dict)
    next_sample: float = 0.0
    done_times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    forecast_cpu: list[float] = field(default_factory=list)

    def finish(self, uid: str, attempt: int, now: float) -> None:
        entry = self.running.get(uid)
        super().finish(uid, attempt, now)
        if entry is not None and entry[0].finish == now:
            self.done_times[entry[0].queue].append(entry[0].duration)

    def fair(self, now: float, events: list[tuple[float, int, str]]) -> None:
        if now >= self.next_sample:
            self.next_sample = now + self.sample_every
            self._sample(now)
        super().fair(now, events)

    def _median(self, queue: str) -> float | None:
        done = self.done_times.get(queue)
        return statistics.median(done[-5000:]) if done else None

    def _sample(self, now: float) -> None:
        d = self.rounds.dispatcher
        snap = d.snapshot(now, self.cluster.clusters())
        waiting = [p for p in snap.pending if p.uid not in self.judged]
        if not waiting:
            return
        ends = {}
        for r in snap.running:
            m = self._median(r.queue)
            if m is not None:
                ends[r.uid] = max(self.attempt_start.get(r.uid, now) + m, now + 60.0)
        durations = {p.uid: m for p in snap.pending if (m := self._median(p.queue)) is not None}
        cpu = time.process_time()
        fc = forecast(
            snap, ends, durations, max_cycles=self.max_cycles, horizon=30 * 86400.0, coalesce=self.coalesce,
            max_step=self.max_step,
        )
        self.forecast_cpu.append(time.process_time() - cpu)
        position: dict[str, int] = defaultdict(int)
        for p in sorted(snap.pending, key=lambda p: (p.created, p.uid)):
            ahead = position[p.queue]
            position[p.queue] += 1
            if p.uid in self.judged:
                continue
            m = self._median(p.queue) or 0.0
            self.judged[p.uid] = Judged(fc.estimates[p.uid].start, now + ahead * m, now)


def score(run: SampledRun, jobs: list[TraceJob]) -> dict[str, float]:
    errs, base, unknown = [], [], 0
    for job in jobs:
        j = run.judged.get(job.uid)
        if j is None or job.start is None or job.start - job.submit <= WAITED:
            continue
        if j.predicted is None:
            unknown += 1
        errs.append(abs((j.predicted if j.predicted is not None else j.baseline) - job.start))
        base.append(abs(j.baseline - job.start))
    return {
        "judged": len(errs),
        "unknown": unknown,
        "forecast_mae_h": statistics.median(errs) / 3600 if errs else math.nan,
        "baseline_mae_h": statistics.median(base) / 3600 if base else math.nan,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="replay only the first N jobs")
    parser.add_argument("--tick", type=float, default=300.0)
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--sample-every", type=float, default=21600.0)
    parser.add_argument("--max-cycles", type=int, default=200)
    parser.add_argument("--max-step", type=float, default=300.0, help="and at most this many seconds apart")
    parser.add_argument("--coalesce", type=float, default=0.1, help="ends this close (a share of the lead time) are one step")
    args = parser.parse_args(argv)
    try:
        need(DATA / "helios_philly_vc.csv", "philly")
        need(DATA / "pollux_philly.csv", "philly")
    except TraceMissing as exc:
        sys.exit(f"bench/forecast_accuracy.py: {exc}")
    jobs, weights = load(args.limit)
    nodes = max(1, round(sum(weights.values()) * args.scale))
    run = SampledRun(
        "fair-noreclaim", jobs, weights, nodes, args.tick, reclaim=False,
        sample_every=args.sample_every, max_cycles=args.max_cycles, coalesce=args.coalesce,
        max_step=args.max_step,
    )  # fmt: skip
    from philly import replay

    wall = replay(run)
    s = score(run, jobs)
    cpu = run.forecast_cpu
    print(f"jobs {len(jobs)}, nodes {nodes}, samples {len(cpu)}, replay {wall:.0f} s")
    print(
        f"judged {s['judged']} jobs that waited > 5 min; forecast unknown for {s['unknown']}\n"
        f"median absolute error of the predicted start: forecast {s['forecast_mae_h']:.2f} h, "
        f"baseline (jobs ahead x median run time) {s['baseline_mae_h']:.2f} h, "
        f"ratio {s['forecast_mae_h'] / s['baseline_mae_h']:.2f}"
    )
    if cpu:
        print(f"forecast cpu per sample: median {statistics.median(cpu):.2f} s, max {max(cpu):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
