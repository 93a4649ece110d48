"""One load-generator process of bench/e2e.py: an asyncio gRPC client submitting jobs.

    python bench/e2e_load.py --target HOST:PORT --prefix w0 --count 5000 --concurrency 32 --out r.json
    python bench/e2e_load.py ... --rate 250                 # open loop: a call every 1/250 s
    python bench/e2e_load.py ... --batch 500 --concurrency 2 # SubmitJobs of 500 jobs
    python bench/e2e_load.py ... --seconds 10               # closed loop: stop sending after 10 s
    python bench/e2e_load.py ... --connections 8            # calls spread over 8 connections
    python bench/e2e_load.py ... --clusters c0,c1           # jobs pinned to those clusters

Closed loop: ``--concurrency`` calls in flight, each sent when one returns. Open loop (``--rate``,
calls/s of this process): call i is due at start + i/rate whatever the hub's speed, and its latency
counts from when it was due (no coordinated omission). Every job's name, due time, send time,
answer time (epoch seconds) and status code go to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vglobal.api.v1 import jobs_pb2, jobs_pb2_grpc
from vglobal.dial import Dial

MANIFEST = (
    '{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","metadata":{"name":"%s",'
    '"annotations":{"vglobal.io/sim-duration":"%s"%s}},"spec":{"minAvailable":1,"tasks":[{"name":"t",'
    '"replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"busybox",'
    '"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}]}}'
)


class Load:
    def __init__(self, args: argparse.Namespace, stubs: list[jobs_pb2_grpc.JobServiceStub]) -> None:
        self.args = args
        self.stubs = stubs
        self.calls = 0
        self.records: list[list[Any]] = []
        self.next = 0
        self.pin = f',"vglobal.io/clusters":"{args.clusters}"' if args.clusters else ""

    def request(self, i: int) -> jobs_pb2.SubmitJobRequest:
        name = f"{self.args.prefix}-{i}"
        return jobs_pb2.SubmitJobRequest(manifest=MANIFEST % (name, self.args.duration, self.pin), request_id=name)

    async def call(self, first: int, due: float) -> None:
        n = min(self.args.batch, self.args.count - first)
        sent = time.time()
        code = "OK"
        stub = self.stubs[self.calls % len(self.stubs)]
        self.calls += 1
        try:
            if self.args.batch > 1:
                reqs = [self.request(i) for i in range(first, first + n)]
                await stub.SubmitJobs(jobs_pb2.SubmitJobsRequest(jobs=reqs), timeout=120)
            else:
                await stub.SubmitJob(self.request(first), timeout=60)
        except grpc.aio.AioRpcError as exc:
            code = exc.code().name
            if len([r for r in self.records if r[4] != "OK"]) < 3:
                print(f"{self.args.prefix}: {code}: {exc.details()}", file=sys.stderr)
        done = time.time()
        for i in range(first, first + n):
            self.records.append([f"{self.args.prefix}-{i}", due, sent, done, code])

    async def closed(self) -> None:
        stop_at = time.time() + self.args.seconds if self.args.seconds > 0 else float("inf")

        async def worker() -> None:
            while self.next < self.args.count and time.time() < stop_at:
                first = self.next
                self.next += self.args.batch
                await self.call(first, time.time())

        await asyncio.gather(*(worker() for _ in range(self.args.concurrency)))

    async def open(self, start: float) -> None:
        per_call = self.args.batch / self.args.rate
        tasks = []
        for k, first in enumerate(range(0, self.args.count, self.args.batch)):
            due = start + k * per_call
            delay = due - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(self.call(first, due)))
        await asyncio.gather(*tasks)


async def main(args: argparse.Namespace) -> None:
    options = [("grpc.max_send_message_length", 64 * 1024 * 1024)]
    token = Path(args.token_file).read_text().strip() if args.token_file else None
    ca = Path(args.ca_file) if args.ca_file else None
    if args.connections > 1:  # else channels of one process share one connection
        options.append(("grpc.use_local_subchannel_pool", 1))
    dial = Dial(args.target, ca_file=ca, token=token)
    async with contextlib.AsyncExitStack() as stack:
        channels = [
            await stack.enter_async_context(dial.aio_channel(options)) for _ in range(args.connections)
        ]
        for channel in channels:
            await channel.channel_ready()
        load = Load(args, [jobs_pb2_grpc.JobServiceStub(c) for c in channels])
        start = args.start_at or time.time()
        if start > time.time():
            await asyncio.sleep(start - time.time())
        if args.rate > 0:
            await load.open(start)
        else:
            await load.closed()
    with open(args.out, "w") as f:
        json.dump(load.records, f)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", "--hub", dest="target", required=True)
    p.add_argument("--ca-file", default="", help="the hub's CA: TLS")
    p.add_argument("--token-file", default="", help="a file holding the bearer token")
    p.add_argument("--prefix", required=True, help="job names are PREFIX-0, PREFIX-1, ...")
    p.add_argument("--count", type=int, required=True, help="jobs to submit")
    p.add_argument("--concurrency", type=int, default=32, help="calls in flight (closed loop)")
    p.add_argument("--rate", type=float, default=0.0, help="jobs/s of this process (open loop)")
    p.add_argument("--batch", type=int, default=1, help="jobs per call (1: SubmitJob; more: SubmitJobs)")
    p.add_argument("--duration", default="1s", help="how long each job's pod runs")
    p.add_argument("--seconds", type=float, default=0.0, help="closed loop: send no call after this long")
    p.add_argument("--start-at", type=float, default=0.0, help="epoch seconds to start at")
    p.add_argument("--connections", type=int, default=1, help="connections the calls are spread over")
    p.add_argument("--clusters", default="", help="the clusters the jobs may run in (vglobal.io/clusters)")
    p.add_argument("--out", required=True)
    return p.parse_args()


if __name__ == "__main__":
    arguments = parse()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main(arguments))
