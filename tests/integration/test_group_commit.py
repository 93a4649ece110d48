"""Concurrent SubmitJob calls are stored in groups (hub/group_commit.py); each call is answered as
if it had been stored alone: its own job, its own error, one job per request_id."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
import sqlalchemy as sa

from tests.integration.test_jobs_api import counts, job
from vglobal.api.v1 import jobs_pb2
from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub


def test_a_burst_of_mixed_submits_is_answered_call_by_call(hub: Hub, engine: sa.Engine) -> None:
    # 64 calls at once from one caller: past its calls in progress (--calls-in-flight) the hub
    # refuses them unread, and the SDK's default retries send them again.
    client = Client(f"127.0.0.1:{hub.port}", timeout=10)
    calls: list[tuple[str, str, str]] = []  # (kind, name, request_id)
    calls += [("new", f"j{i}", f"r{i}") for i in range(40)]
    calls += [("same request", "dup", "dup") for _ in range(10)]
    calls += [("same name", "taken", f"taken-{i}") for i in range(8)]
    calls += [("no queue", f"lost{i}", f"lost{i}") for i in range(6)]
    start = threading.Barrier(len(calls))

    def submit(call: tuple[str, str, str]) -> jobs_pb2.SubmitJobResponse | VGlobalError:
        kind, name, rid = call
        manifest = job(name, queue="nope" if kind == "no queue" else "default")
        start.wait()
        try:
            return client.submit_job(manifest, request_id=rid)
        except VGlobalError as exc:
            return exc

    with client, ThreadPoolExecutor(len(calls)) as pool:
        results = list(pool.map(submit, calls))
    by_kind: dict[str, list[jobs_pb2.SubmitJobResponse | VGlobalError]] = {}
    for (kind, _, _), r in zip(calls, results, strict=True):
        by_kind.setdefault(kind, []).append(r)

    fresh = by_kind["new"]
    assert all(isinstance(r, jobs_pb2.SubmitJobResponse) and r.created for r in fresh), fresh
    assert sorted(r.job.name for r in fresh) == sorted(f"j{i}" for i in range(40))  # type: ignore[union-attr]
    same = by_kind["same request"]
    assert all(isinstance(r, jobs_pb2.SubmitJobResponse) for r in same), same
    assert sum(r.created for r in same) == 1 and len({r.job.uid for r in same}) == 1  # type: ignore[union-attr]
    named = by_kind["same name"]
    won = [r for r in named if isinstance(r, jobs_pb2.SubmitJobResponse)]
    lost = [r for r in named if isinstance(r, VGlobalError)]
    assert len(won) == 1 and won[0].created and len(lost) == 7
    assert {(e.code, e.message) for e in lost} == {
        (grpc.StatusCode.ALREADY_EXISTS, 'job "team-a/taken" already exists')
    }
    missing = by_kind["no queue"]
    assert all(isinstance(r, VGlobalError) and '"nope"' in r.message for r in missing), missing
    # 40 + 1 + 1 jobs, each with its binding and one Submitted event; nothing of the refused calls.
    assert counts(engine) == (42, 42, 42)
    with engine.connect() as conn:
        names = conn.execute(sa.text("SELECT name FROM jobs WHERE request_id LIKE 'lost%'")).all()
    assert names == []
