"""The layer contracts of DESIGN.md §3, checked by import-linter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold() -> None:
    exe = Path(sys.executable).parent / "lint-imports"
    res = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "broken" not in res.stdout.lower().replace("0 broken", "")
