"""The committed gRPC code matches proto/ (regenerate with `make proto`)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    if (
        shutil.which(
            "protoc-gen-mypy",
            path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        )
        is None
    ):
        pytest.fail("mypy-protobuf (protoc-gen-mypy) is needed to check the generated stubs")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_protos
    finally:
        sys.path.pop(0)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    out = tmp_path / "api" / "v1"
    gen_protos.generate(out)
    committed = ROOT / "vglobal" / "api" / "v1"
    fresh = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    current = {p.name: p.read_text() for p in committed.iterdir() if p.is_file()}
    stale = sorted(n for n in fresh.keys() | current.keys() if fresh.get(n) != current.get(n))
    assert not stale, f"vglobal/api/v1 is stale ({', '.join(stale)}): run `make proto`"
