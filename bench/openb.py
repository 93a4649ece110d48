"""The FGD experiment (USENIX ATC'23) on the Alibaba GPU trace, every policy side by side.

For each policy and seed: ``vglobal sim openb`` semantics (pods drawn with replacement in the seed's
order until arrived GPU demand is 130% of capacity, placed one at a time, never leaving). Prints
Markdown tables of the mean GPU allocation ratio over the seeds at 100% and 130% arrived demand,
with the published numbers beside, and the seconds per run. Run from the repository root:

    .venv/bin/python bench/openb.py                          # seeds 42-51, both memory models
    .venv/bin/python bench/openb.py --seeds 42 --jobs 1      # quick
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vglobal.sim.openb import POLICIES, load_nodes, load_pods, run_openb
from vglobal.sim.traces import TraceMissing, need

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "openb"
# Published in the FGD paper on this file (mean of 10 seeds), allocation % at 100% / 130% demand.
PUBLISHED = {"random": (86.30, 87.47), "bestfit": (92.86, 93.08), "fgd": (95.23, 95.39)}


def one(args: tuple[str, int, bool]) -> tuple[str, int, bool, float, float, float]:
    policy, seed, memory = args
    nodes = load_nodes(DATA / "openb_node_list_gpu_node.csv")
    pods = load_pods(DATA / "openb_pod_list_default.csv")
    start = time.perf_counter()
    r = run_openb(nodes, pods, policy, seed, 1.3, memory)
    took = time.perf_counter() - start
    ratio = r["alloc_ratio"]
    assert isinstance(ratio, dict)
    return policy, seed, memory, float(ratio["100"]), float(ratio["130"]), took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="42-51", help="a range a-b or a comma list")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--memory", choices=["both", "yes", "no"], default="both")
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma list (default: all)")
    args = ap.parse_args()
    try:
        need(DATA / "openb_node_list_gpu_node.csv", "openb")
        need(DATA / "openb_pod_list_default.csv", "openb")
    except TraceMissing as exc:
        sys.exit(f"bench/openb.py: {exc}")
    if "-" in args.seeds:
        lo, hi = (int(x) for x in args.seeds.split("-"))
        seeds = list(range(lo, hi + 1))
    else:
        seeds = [int(x) for x in args.seeds.split(",")]
    models = {"both": [False, True], "yes": [True], "no": [False]}[args.memory]
    policies = [p for p in args.policies.split(",") if p]
    work = [(p, s, m) for m in models for p in policies for s in seeds]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, work))
    print(
        f"command: .venv/bin/python bench/openb.py --seeds {args.seeds} --jobs {args.jobs} "
        f"--memory {args.memory} --policies {args.policies}"
    )
    print(f"nodes: {DATA / 'openb_node_list_gpu_node.csv'}, pods: {DATA / 'openb_pod_list_default.csv'}")
    for memory in models:
        title = "pod memory honoured" if memory else "memory ignored (the paper's cpu+GPU model)"
        print(f"\n### GPU allocation ratio, mean of seeds {seeds[0]}-{seeds[-1]}: {title}\n")
        print(
            "| policy | at 100% demand | at 130% demand | min..max at 130% | published 100% / 130% | s per run |"
        )
        print("|---|---|---|---|---|---|")
        for policy in policies:
            got = [r for r in rows if r[0] == policy and r[2] == memory]
            a100 = statistics.mean(r[3] for r in got)
            a130 = statistics.mean(r[4] for r in got)
            lo, hi = min(r[4] for r in got), max(r[4] for r in got)
            pub = PUBLISHED.get(policy)
            pub_text = f"{pub[0]:.2f} / {pub[1]:.2f}" if pub else "-"
            name = "fgd (ours: FGD + cpu-stranded GPU + tight ties)" if policy == "fgd" else policy
            secs = statistics.mean(r[5] for r in got)
            print(f"| {name} | {a100:.2f} | {a130:.2f} | {lo:.2f}..{hi:.2f} | {pub_text} | {secs:.1f} |")


if __name__ == "__main__":
    main()
