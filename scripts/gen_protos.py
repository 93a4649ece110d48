"""Regenerate vglobal/api/v1 from proto/vglobal/v1 (Python, gRPC and mypy stubs).

Run with `make proto`. The output is committed; tests/unit/test_api_generated.py fails when it is stale.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
OUT_DIR = ROOT / "vglobal" / "api" / "v1"


def generate(out_dir: Path) -> None:
    protos = sorted(str(p.relative_to(PROTO_DIR)) for p in (PROTO_DIR / "vglobal" / "v1").glob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "protoc",
            f"-I{PROTO_DIR}",
            f"-I{include}",
            f"--python_out={tmp}",
            f"--grpc_python_out={tmp}",
            f"--mypy_out={tmp}",
            f"--mypy_grpc_out={tmp}",
            *protos,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        out_dir.mkdir(parents=True, exist_ok=True)
        for old in out_dir.glob("*_pb2*"):
            old.unlink()
        for src in sorted((Path(tmp) / "vglobal" / "v1").iterdir()):
            text = src.read_text()
            # protoc writes imports for the proto package path; ours lives under vglobal.api.
            text = re.sub(r"\bfrom vglobal\.v1 import", "from vglobal.api.v1 import", text)
            text = re.sub(r"\bimport vglobal\.v1\.", "import vglobal.api.v1.", text)
            text = re.sub(r"\bvglobal\.v1\.(\w+_pb2)\b", r"vglobal.api.v1.\1", text)
            (out_dir / src.name).write_text(text)
    (out_dir / "__init__.py").write_text(
        '"""Generated gRPC code for the vglobal.v1 API. Do not edit: run `make proto`."""\n'
    )
    (out_dir.parent / "__init__.py").write_text('"""Generated API packages."""\n')


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT_DIR
    if target.exists() and target != OUT_DIR:
        shutil.rmtree(target)
    generate(target)


if __name__ == "__main__":
    main()
