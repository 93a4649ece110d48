"""`vglobal get jobs` prints page by page exactly what printing the whole list at once prints, and
SDK batches keep to their size and byte budget."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from typing import Any

import pytest
from rich.console import Console

from vglobal.cli import output
from vglobal.sdk.batches import batches


def rows(n: int) -> list[dict[str, Any]]:
    return [
        {"name": f"j{i}", "namespace": "ns", "request": {"cpu": "1"}, "tasks": [{"n": i}]} for i in range(n)
    ]


def printed(fn: Any, *args: Any) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        fn(*args)
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize("sizes", [[], [0], [3], [2, 0, 5], [1, 1, 1]])
def test_pages_print_as_the_whole_list(fmt: str, sizes: list[int]) -> None:
    whole = rows(sum(sizes))
    pages, k = [], 0
    for n in sizes:
        pages.append(whole[k : k + n])
        k += n
    console = Console(file=io.StringIO())
    assert printed(output.emit_pages, "jobs", iter(pages), fmt, console) == printed(
        output.emit, "jobs", whole, fmt, console
    )


def test_a_table_per_page_with_one_header() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=200)
    output.emit_pages("jobs", iter([rows(2), rows(3)]), "table", console)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1 + 5 and lines[0].split()[:2] == ["NAMESPACE", "NAME"]


def test_batches_keep_order_size_and_bytes() -> None:
    items = [("x" * 10, f"r{i}") for i in range(7)]
    assert [len(b) for b in batches(items, size=3)] == [3, 3, 1]
    assert [i for b in batches(items, size=3) for i in b] == items
    assert [len(b) for b in batches(items, size=100, max_bytes=25)] == [2, 2, 2, 1]
    big = [("y" * 100, "a"), ("z", "b")]
    assert [len(b) for b in batches(big, size=10, max_bytes=50)] == [1, 1]
    with pytest.raises(ValueError, match="at least 1"):
        list(batches(items, size=0))
