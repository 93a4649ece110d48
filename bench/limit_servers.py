"""The ceilings of bench/limit.py: JobService servers that do only part of the hub's work.

    python bench/limit_servers.py --kind fixed  --listen HOST:PORT [--tls-cert C --tls-key K --auth-config A]
    python bench/limit_servers.py --kind insert --listen HOST:PORT --database-url URL [TLS and auth as above]

Both are grpc.aio servers from the generated stubs, behind the hub's own Guard (decoding, NUL
check, token authentication, roles) and the hub's TLS, with coroutine handlers on the loop:
- fixed: SubmitJob and SubmitJobs answer a fixed reply; no parsing, no database.
- insert: each manifest is INSERTed (as jsonb, keyed by its request_id, so a repeat is not stored
  twice) by a group committer: the calls that arrive while a group is being committed wait and go
  in the next one, one statement and one commit per group, on two connections. SubmitJobs is one
  statement per call, on a connection of its own. An answer is sent only after its commit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import grpc
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.hub.auth.authenticator import Authenticator
from vglobal.hub.grpc_server import server_credentials
from vglobal.hub.guard import Guard
from vglobal.hub.probes import HealthServicer

TABLE = "CREATE TABLE IF NOT EXISTS limit_jobs (request_id text PRIMARY KEY, manifest jsonb NOT NULL)"
INSERT = (
    "INSERT INTO limit_jobs (request_id, manifest) "
    "SELECT r, CAST(m AS jsonb) FROM unnest(CAST(%s AS text[]), CAST(%s AS text[])) AS d(r, m) "
    "ON CONFLICT (request_id) DO NOTHING RETURNING request_id"
)
COMMITTERS = 2
MAX_GROUP = 1000


def reply(name: str, created: bool) -> jobs_pb2.SubmitJobResponse:
    job = jobs_pb2.Job(uid=name, name=name, namespace="default", queue="default", phase="Pending")
    return jobs_pb2.SubmitJobResponse(job=job, created=created)


FIXED = reply("fixed", True)


class Fixed(jobs_pb2_grpc.JobServiceServicer):
    async def SubmitJob(self, request: jobs_pb2.SubmitJobRequest, context: Any) -> jobs_pb2.SubmitJobResponse:
        return FIXED

    async def SubmitJobs(
        self, request: jobs_pb2.SubmitJobsRequest, context: Any
    ) -> jobs_pb2.SubmitJobsResponse:
        return jobs_pb2.SubmitJobsResponse(results=[FIXED] * len(request.jobs))


class Inserting(jobs_pb2_grpc.JobServiceServicer):
    def __init__(self, url: str) -> None:
        self.url = url
        self.waiting: list[tuple[str, str, asyncio.Future[bool]]] = []
        self.ready = asyncio.Event()
        self.conns: list[psycopg.AsyncConnection[Any]] = []
        # SubmitJobs' connections, one call on each at a time.
        self.spare: asyncio.Queue[psycopg.AsyncConnection[Any]] = asyncio.Queue()

    async def start(self) -> None:
        for _ in range(COMMITTERS):
            self.conns.append(await psycopg.AsyncConnection.connect(self.url))
            self.spare.put_nowait(await psycopg.AsyncConnection.connect(self.url))
        async with self.conns[0].transaction():
            await self.conns[0].execute(TABLE)
        for conn in self.conns:
            asyncio.get_running_loop().create_task(self._commit_groups(conn))

    async def _insert(self, conn: psycopg.AsyncConnection[Any], ids: list[str], docs: list[str]) -> set[str]:
        async with conn.transaction():
            cur = await conn.execute(INSERT, (ids, docs))
            return {r[0] for r in await cur.fetchall()}

    async def _commit_groups(self, conn: psycopg.AsyncConnection[Any]) -> None:
        while True:
            while not self.waiting:
                self.ready.clear()
                await self.ready.wait()
            group, self.waiting = self.waiting[:MAX_GROUP], self.waiting[MAX_GROUP:]
            try:
                stored = await self._insert(conn, [g[0] for g in group], [g[1] for g in group])
            except Exception as exc:
                for _, _, answer in group:
                    answer.set_exception(exc)
                continue
            for rid, _, answer in group:
                answer.set_result(rid in stored)

    async def SubmitJob(self, request: jobs_pb2.SubmitJobRequest, context: Any) -> jobs_pb2.SubmitJobResponse:
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.waiting.append((request.request_id, request.manifest, answer))
        self.ready.set()
        return reply(request.request_id, await answer)

    async def SubmitJobs(
        self, request: jobs_pb2.SubmitJobsRequest, context: Any
    ) -> jobs_pb2.SubmitJobsResponse:
        ids = [j.request_id for j in request.jobs]
        conn = await self.spare.get()
        try:
            stored = await self._insert(conn, ids, [j.manifest for j in request.jobs])
        finally:
            self.spare.put_nowait(conn)
        return jobs_pb2.SubmitJobsResponse(results=[reply(r, r in stored) for r in ids])


async def serve(args: argparse.Namespace) -> None:
    auth = Authenticator(Path(args.auth_config) if args.auth_config else None)
    server = grpc.aio.server(interceptors=[Guard(auth, None)])
    servicer: jobs_pb2_grpc.JobServiceServicer
    if args.kind == "insert":
        inserting = Inserting(args.database_url)
        await inserting.start()
        servicer = inserting
    else:
        servicer = Fixed()
    jobs_pb2_grpc.add_JobServiceServicer_to_server(servicer, server)
    checks = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checks, server)
    if args.tls_cert:
        server.add_secure_port(args.listen, server_credentials(Path(args.tls_cert), Path(args.tls_key)))
    else:
        server.add_insecure_port(args.listen)
    await server.start()
    await checks.set("", health_pb2.HealthCheckResponse.SERVING)
    await server.wait_for_termination()


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=["fixed", "insert"], required=True)
    p.add_argument("--listen", required=True)
    p.add_argument("--database-url", default="", help="insert: a libpq URL")
    p.add_argument("--tls-cert", default="")
    p.add_argument("--tls-key", default="")
    p.add_argument("--auth-config", default="")
    return p.parse_args()


if __name__ == "__main__":
    asyncio.run(serve(parse()))
