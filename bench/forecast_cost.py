"""What the forecast loop costs the leader per run, at 10k and 100k pending jobs.

    .venv/bin/python bench/forecast_cost.py [--jobs 10000,100000] [--cycles 4,16,64]

The hub's forecast loop (hub/forecast/loop.py) replays admit() forward on a virtual clock from the
dispatcher's last cycle; each replayed cycle is one admit() over what is still waiting. This runs the
same pure replay (admission/forecast.py) on bench/workload.py's snapshots (20 clusters x 500 nodes,
a fifth as many running jobs as pending), with running jobs ending at spread times over the next day
and waiting ones running for one to eight hours, and prints, per size and replay length: CPU seconds
for the whole replay and per replayed cycle, how far the virtual clock got, and how many of the
waiting jobs got an estimate. The loop's ``--forecast-budget`` (1 s) halves the replay length when a
run costs more, down to 4 cycles: the 4-cycle row is what a run costs at least.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import make_snapshot

from vglobal.admission import Wait, admit
from vglobal.admission.forecast import forecast


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="10000,100000")
    ap.add_argument("--cycles", default="4,16,64")
    args = ap.parse_args()
    print("| pending | replay cycles | CPU s (run) | CPU s per cycle | virtual h reached | waiting with an estimate |")
    print("|---|---|---|---|---|---|")
    for n in (int(x) for x in args.jobs.split(",")):
        snap = make_snapshot(n, running=n // 5)
        first = admit(snap)
        waiting = [p for p in snap.pending if isinstance(first.decisions.get(p.uid), Wait)]
        ends = {r.uid: snap.now + 600.0 + (i * 7919 % 86_400) for i, r in enumerate(snap.running)}
        durations = {p.uid: 3600.0 * (1 + i % 8) for i, p in enumerate(snap.pending)}
        for cycles in (int(x) for x in args.cycles.split(",")):
            cpu = time.process_time()
            fc = forecast(snap, ends, durations, max_cycles=cycles)
            cpu = time.process_time() - cpu
            known = sum(1 for p in waiting if fc.estimates[p.uid].start is not None)
            print(
                f"| {n:,} | {fc.cycles} | {cpu:.2f} | {cpu / max(fc.cycles, 1):.3f} "
                f"| {(fc.reached - snap.now) / 3600:.1f} | {known:,} of {len(waiting):,} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
