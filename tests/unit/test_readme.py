"""The README stays navigable and speaks only of the repository: its table of contents matches its
headings (scripts/readme_toc.py made it), its links inside the repository lead somewhere, every
path it names under one of the repository's folders exists, and its Python blocks parse (the e2e
demo test runs them against a hub)."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FOLDERS = ("vglobal", "tests", "examples", "clusters", "deploy", "bench", "scripts", "proto", "docs")


def _toc_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("readme_toc", ROOT / "scripts" / "readme_toc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_of_contents_matches_the_headings() -> None:
    toc = _toc_module()
    assert toc.with_toc(README) == README, "run: python scripts/readme_toc.py"
    titles = [title for _, title in toc.headings(README)]
    assert titles.index("First day") < titles.index("Running it yourself")  # before the internals
    # A heading added later shows up in the table made anew, so a stale table fails the check above.
    grown = README + "\n## A section added later\n"
    assert "(#a-section-added-later)" in toc.with_toc(grown)


def test_anchors_are_githubs() -> None:
    toc = _toc_module()
    seen: dict[str, int] = {}
    got = [toc.anchor(t, seen) for t in ("CronJobs, JobFlows and watching jobs", "`vglobal` — A/B", "Workloads", "Workloads")]
    assert got == ["cronjobs-jobflows-and-watching-jobs", "vglobal--ab", "workloads", "workloads-1"]


def test_no_reference_outside_the_repository() -> None:
    assert "DESIGN.md" not in README
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README):
        if not target.startswith(("http://", "https://", "mailto:")):
            assert (ROOT / target).exists(), target
    for span in re.findall(r"`([^`\s]+)`", README):
        path = span.rstrip(".,:;")
        if path.split("/")[0] in FOLDERS and "/" in path and not any(c in path for c in "*<{$"):
            assert (ROOT / path).exists(), path


def test_the_python_blocks_parse() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks
    for block in blocks:
        ast.parse(block)
