"""Agent streams' syncs and reports go to the database in groups (hub/agents/sync_group.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from vglobal.hub.agents.sync_group import SyncGroups


def groups_of(together: Callable[[list[int]], list[str]], alone: Callable[[int], str]) -> list[Any]:
    """Ten requests asked at once; each one's answer (or exception) and the groups run."""

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(2) as pool:
            groups: SyncGroups[int, str] = SyncGroups(
                together, alone, lambda fn, *a: loop.run_in_executor(pool, fn, *a)
            )
            got = await asyncio.gather(*(groups(i) for i in range(10)), return_exceptions=True)
            return [got, groups.groups]

    return asyncio.run(main())


def test_requests_asked_together_share_a_few_groups() -> None:
    seen: list[list[int]] = []

    def together(reqs: list[int]) -> list[str]:
        seen.append(reqs)
        return [f"r{r}" for r in reqs]

    got, groups = groups_of(together, lambda r: pytest.fail("no group failed"))
    assert got == [f"r{i}" for i in range(10)]
    assert sorted(r for g in seen for r in g) == list(range(10))
    assert groups == len(seen) < 10 and seen[0] == [0, 1, 2, 3]  # three groups at once share the ten


def test_a_failed_group_runs_each_alone_and_only_the_failing_request_fails() -> None:
    def together(reqs: list[int]) -> list[str]:
        if 3 in reqs:
            raise RuntimeError("a row of 3 is bad")
        return [f"r{r}" for r in reqs]

    def alone(r: int) -> str:
        if r == 3:
            raise RuntimeError("bad 3")
        return f"a{r}"

    got, _ = groups_of(together, alone)
    assert [str(g) for g in got] == ["a0", "a1", "a2", "bad 3", *[f"r{i}" for i in range(4, 10)]]
