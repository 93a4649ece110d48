"""`vglobal apply -f DIR` of many Jobs: batches, a refused document reported alone, a summary, and
applying the folder again stores nothing twice; the SDK's submit_many and the async client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from tests.integration.test_jobs_api import counts, job
from vglobal.aio import AsyncClient
from vglobal.cli.main import cli
from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub


def folder(tmp_path: Path, n: int) -> Path:
    d = tmp_path / "jobs"
    d.mkdir()
    for i in range(n):
        (d / f"j{i:04d}.yaml").write_text(job(f"j{i}"))
    (d / "zz-bad.yaml").write_text(job("bad", queue="nope"))
    return d


def test_apply_a_folder_in_batches(hub: Hub, engine: sa.Engine, tmp_path: Path) -> None:
    d = folder(tmp_path, 1200)  # three calls of 500 at most
    args = ["--hub", f"127.0.0.1:{hub.port}", "apply", "-f", str(d)]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 1, first.output
    assert "1200 jobs created, 0 configured, 0 unchanged, 1 refused" in first.stdout
    assert "zz-bad.yaml#0 (Job bad)" in first.stderr and '"nope"' in first.stderr
    assert counts(engine) == (1200, 1200, 1200)
    again = CliRunner().invoke(cli, args)
    assert "0 jobs created, 0 configured, 1200 unchanged, 1 refused" in again.stdout
    assert counts(engine) == (1200, 1200, 1200)


def test_sdk_batches_and_async_client(hub: Hub, engine: sa.Engine) -> None:
    target = f"127.0.0.1:{hub.port}"
    items = [(job(f"s{i}"), f"s{i}") for i in range(1100)]
    calls: list[int] = []
    with Client(target) as c:
        got = c.submit_many(items, batch_size=400, progress=calls.append)
        assert calls == [400, 400, 300]
        assert [r.job.name for r in got] == [f"s{i}" for i in range(1100)] and all(r.created for r in got)
        pages = list(c.job_pages(page_size=300))
        assert [len(p) for p in pages] == [300, 300, 300, 200]

    async def run() -> tuple[list[bool], int, str]:
        async with AsyncClient(target) as ac:
            one = await ac.submit_job(job("a0"), request_id="a0")
            more = await ac.submit_many(
                items[:10] + [(job(f"a{i}"), f"a{i}") for i in range(1, 900)], batch_size=300
            )
            names = [j.name async for j in ac.list_jobs(page_size=700)]
            return (
                [one.created, *(r.created for r in more)],
                len(names),
                (await ac.get_job("a5", "team-a")).name,
            )

    created, listed, name = asyncio.run(run())
    assert created == [True] + [False] * 10 + [True] * 899  # s0..s9 submitted before: not stored again
    assert listed == 2000 and name == "a5"
    assert counts(engine)[:2] == (2000, 2000)


def test_submit_many_sends_a_batch_again_without_what_the_hub_refused(hub: Hub, engine: sa.Engine) -> None:
    items = [(job(f"k{i}"), f"k{i}") for i in range(10)]
    items[2] = (job("bad1", queue="nope"), "bad1")
    items[6] = (job("bad2", queue="nope"), "bad2")
    items[7] = ("kind: [", "broken")
    with Client(f"127.0.0.1:{hub.port}", retries=1) as c:
        with pytest.raises(VGlobalError) as err:  # by default the first refusal stops it all
            c.submit_many(items, batch_size=4)
        assert err.value.message.startswith("jobs[2]: ")
        assert counts(engine)[0] == 0  # the first batch holds the refused one: none of it stored
        calls: list[int] = []
        got = c.submit_many(items, batch_size=4, progress=calls.append, keep_going=True)
    assert calls == [4, 4, 2]
    refused = {i: str(r) for i, r in enumerate(got) if isinstance(r, VGlobalError)}
    assert sorted(refused) == [2, 6, 7]
    assert '"nope"' in refused[2] and '"nope"' in refused[6] and not refused[7].startswith("jobs[")
    stored = [r.job.name for r in got if not isinstance(r, VGlobalError)]
    assert stored == [f"k{i}" for i in (0, 1, 3, 4, 5, 8, 9)]
    assert counts(engine)[0] == 7
