"""The layer contracts of DESIGN.md §3, checked by import-linter: they hold, and each one fails
when the import it forbids is made (in a copy of the package, one deliberate bad import per run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"

# "contract id[:variant]" -> (module to add, its one bad import). Each probe is a new module nothing
# imports, so the bad import reaches no other module through an import chain.
PROBES: dict[str, tuple[str, str]] = {
    "floors": ("vglobal/model/_probe.py", "import vglobal.api"),
    "floors:workflows": ("vglobal/workflows/_probe.py", "import vglobal.hub"),
    "cores-independent": ("vglobal/scheduler/_probe.py", "import vglobal.admission"),
    "cores-independent:workflows": ("vglobal/workflows/_probe.py", "import vglobal.admission"),
    "cores-only-model": ("vglobal/admission/_probe.py", "import vglobal.api"),
    "cores-only-model:workflows": ("vglobal/workflows/_probe.py", "import vglobal.api"),
    "cores-pure": ("vglobal/admission/_probe.py", "import time"),
    "cores-pure:third-party": ("vglobal/scheduler/_probe.py", "import sqlalchemy"),
    "cores-pure:workflows": ("vglobal/workflows/_probe.py", "import vglobal.clock"),
    "cores-no-datetime": ("vglobal/admission/_probe.py", "import datetime"),
    "store-only-model": ("vglobal/store/_probe.py", "import vglobal.api"),
    "hub-no-scheduler": ("vglobal/hub/_probe.py", "import vglobal.scheduler"),
    "hub-servicers-top": ("vglobal/hub/_probe.py", "import vglobal.hub.servicers.jobs"),
    "hub-acyclic": ("vglobal/hub/auth/_probe.py", "import vglobal.hub.submit"),  # submit imports auth
    "agent-no-admission-store": ("vglobal/agent/_probe.py", "import vglobal.store"),
    "convert-only-model-api": ("vglobal/convert.py", "import vglobal.store"),
    "dashboard-client-only": ("vglobal/dashboard/_probe.py", "import vglobal.hub"),
    "floors:sdk": ("vglobal/sdk/_probe.py", "import vglobal.hub"),
    "sdk-client-only": ("vglobal/sdk/_probe.py", "import vglobal.config"),
    "sdk-by-its-package": ("vglobal/cli/_probe.py", "import vglobal.client"),
}


def _contracts() -> dict[str, str]:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {c["id"]: c["name"] for c in conf["tool"]["importlinter"]["contracts"]}


def _lint(cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "COLUMNS": "400"}  # one contract per line in the report
    return subprocess.Popen(
        [str(LINT), "--no-cache"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_import_contracts_hold() -> None:
    proc = _lint(ROOT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in out


def test_every_contract_fails_on_the_import_it_forbids(tmp_path: Path) -> None:
    contracts = _contracts()
    targets = {probe: probe.split(":")[0] for probe in PROBES}
    assert set(targets.values()) == set(contracts), "every contract needs a probe that breaks it"
    runs: dict[str, subprocess.Popen[str]] = {}
    for probe, (module, bad_import) in PROBES.items():
        copy = tmp_path / probe
        shutil.copytree(ROOT / "vglobal", copy / "vglobal", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
        (copy / module).write_text(f"{bad_import}\n")
        runs[probe] = _lint(copy)
    for probe, proc in runs.items():
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode != 0, f"{PROBES[probe]} broke no contract:\n{out}"
        assert f"{contracts[targets[probe]]} BROKEN" in out, f"{PROBES[probe]}:\n{out}"
