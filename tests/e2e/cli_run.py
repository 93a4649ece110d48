"""Running the installed `vglobal` console script as a user does (stdin, environment, exit code)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# The console script next to this interpreter (the venv's bin/vglobal), else on PATH.
VGLOBAL = (
    str(Path(sys.executable).with_name("vglobal"))
    if Path(sys.executable).with_name("vglobal").exists()
    else (shutil.which("vglobal") or "vglobal")
)


def vglobal(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``vglobal ARGS...`` with stdout a pipe (not a terminal), as in scripts and CI."""
    return subprocess.run(
        [VGLOBAL, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )
