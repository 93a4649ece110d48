"""The simulator against the hub on more seeds than the suite runs: tests/e2e/test_sim_vs_hub.py
over a range of seeded scenarios (each: a hub on a fresh database, agent processes, about 20-25 s).

    .venv/bin/python bench/sim_vs_hub.py [--seeds 0-29]

Needs VGLOBAL_TEST_DATABASE_URL (or pytest's embedded Postgres) as the e2e tests do. Exits with
pytest's status; a differing seed prints the scenario and each job where hub and simulator differ.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0-29", help='"a-b" or "a,b,c" (default 0-29)')
    args = ap.parse_args()
    env = {**os.environ, "VGLOBAL_DIFF_SEEDS": args.seeds}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "tests/e2e/test_sim_vs_hub.py"]
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
