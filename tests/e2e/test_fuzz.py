"""Fuzzing a running hub: hypothesis-made and random-byte requests to every RPC, the agent stream
included. Never INTERNAL (or UNKNOWN), never a traceback in the hub's log, Health answers
throughout, and nothing is stored by a refused call. How fast Health answers meanwhile, and how long
the fuzzing takes, are figures for bench/api_under_load.py, not assertions."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import sqlalchemy as sa
from google.protobuf import descriptor as d
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.harness import System
from tests.e2e.proto_strategies import messages
from vglobal.api.v1 import (
    agent_pb2,
    clusters_pb2,
    cronjobs_pb2,
    hyperjobs_pb2,
    jobflows_pb2,
    jobs_pb2,
    queues_pb2,
)

pytestmark = pytest.mark.e2e

BAD_CODES = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
METHODS = [
    (f"/{service.full_name}/{method.name}", method)
    for module in (jobs_pb2, queues_pb2, clusters_pb2, cronjobs_pb2, jobflows_pb2, hyperjobs_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
]
UNARY = [(name, m) for name, m in METHODS if not m.server_streaming]
WATCH = "/vglobal.v1.JobService/WatchJobs"
CONNECT = "/vglobal.v1.AgentService/Connect"
EXAMPLES = 60  # per RPC: with the random bytes and the stream, the whole test stays well under a minute


class Health:
    """Asks Health/Check every 0.2 s while the fuzzing runs; records what failed and how long each
    answer took. The deadline is a hang's, not a latency bound (that is bench/api_under_load.py's)."""

    def __init__(self, target: str, deadline: float = 30.0) -> None:
        self.target = target
        self.deadline = deadline
        self.failures: list[str] = []
        self.checks = 0
        self.took: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with grpc.insecure_channel(self.target) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            while not self._stop.wait(0.2):
                started = time.monotonic()
                try:
                    resp = stub.Check(health_pb2.HealthCheckRequest(), timeout=self.deadline)
                    self.took.append(time.monotonic() - started)
                    if resp.status == health_pb2.HealthCheckResponse.SERVING:
                        self.checks += 1
                    else:
                        self.failures.append(f"status {resp.status}")
                except grpc.RpcError as exc:
                    self.failures.append(f"{exc.code()} after {time.monotonic() - started:.2f}s")

    def __enter__(self) -> Health:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)


class Outcomes:
    """What the hub answered; the names that successful writes may have stored."""

    def __init__(self) -> None:
        self.bad: list[str] = []
        self.stored_ok: set[str] = set()

    def record(self, method: str, code: grpc.StatusCode | None, details: str, request: Any) -> None:
        if code in BAD_CODES:
            self.bad.append(f"{method}: {code} {details[:200]} for {str(request)[:300]!r}")
        if code is None:
            self.stored_ok.add(method)


def unary(channel: grpc.Channel, method: str, payload: bytes) -> tuple[grpc.StatusCode | None, str]:
    try:
        channel.unary_unary(method)(payload, timeout=10)
        return None, ""
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""


def watch(channel: grpc.Channel, payload: bytes) -> tuple[grpc.StatusCode | None, str]:
    """A server stream: a well-formed watch stays open, so a short deadline ends it."""
    call = channel.unary_stream(WATCH)(payload, timeout=0.3)
    try:
        for _ in call:
            pass
        return None, ""
    except grpc.RpcError as exc:
        code = exc.code()
        return (None if code == grpc.StatusCode.DEADLINE_EXCEEDED else code), exc.details() or ""


def stream(channel: grpc.Channel, payloads: list[bytes]) -> tuple[grpc.StatusCode | None, str]:
    call = channel.stream_stream(CONNECT)(iter(payloads), timeout=3)
    try:
        for _ in call:
            pass
        return None, ""
    except grpc.RpcError as exc:
        code = exc.code()
        # The hub may keep a well-formed stream open until our deadline: that is no failure.
        return (None if code == grpc.StatusCode.DEADLINE_EXCEEDED else code), exc.details() or ""


def stored(engine: sa.Engine) -> dict[str, set[str]]:
    with engine.connect() as c:
        return {
            "jobs": {r[0] for r in c.execute(sa.text("SELECT namespace || '/' || name FROM jobs"))},
            "queues": {r[0] for r in c.execute(sa.text("SELECT name FROM queues"))},
            "priority_classes": {r[0] for r in c.execute(sa.text("SELECT name FROM priority_classes"))},
        }


@pytest.fixture
def fuzzed(system: System, database_url: str) -> Iterator[tuple[System, grpc.Channel, sa.Engine]]:
    system.start_hub("--rate-limit", "0")
    engine = sa.create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with grpc.insecure_channel(system.target) as channel:
        yield system, channel, engine
    engine.dispose()


def test_fuzzing_every_rpc_never_breaks_the_hub(fuzzed: tuple[System, grpc.Channel, sa.Engine]) -> None:
    system, channel, engine = fuzzed
    outcomes = Outcomes()
    before = stored(engine)
    with Health(system.target) as health:
        fuzz_everything(channel, outcomes)
    log = system.log("hub")
    assert not outcomes.bad, "\n".join(outcomes.bad[:20])
    assert "Traceback" not in (system.tmp / "hub.log").read_text(errors="replace"), log
    assert not health.failures and health.checks > 0, health.failures
    after = stored(engine)
    # Refused calls stored nothing: every new row came from a write the hub accepted.
    writes = {m.rsplit("/", 1)[1] for m in outcomes.stored_ok}
    if not writes & {"SubmitJob", "SubmitJobs"}:
        assert after["jobs"] <= before["jobs"]
    if "ApplyQueue" not in writes:
        assert after["queues"] <= before["queues"]
    if "ApplyPriorityClass" not in writes:
        assert after["priority_classes"] == before["priority_classes"]


def fuzz_everything(channel: grpc.Channel, outcomes: Outcomes) -> None:
    """Every unary RPC, the watch and the agent stream, in a fixed order with fixed seeds."""
    rng = random.Random(20240613)
    for method, desc in UNARY:
        _fuzz_unary(channel, method, desc.input_type, outcomes)
        for _ in range(EXAMPLES):  # random bytes, and valid messages cut short
            payload = rng.randbytes(rng.randint(0, 64))
            outcomes.record(method, *unary(channel, method, payload), payload)
    _fuzz_watch(channel, outcomes, rng)
    _fuzz_stream(channel, outcomes, rng)


def _fuzz_unary(channel: grpc.Channel, method: str, desc: d.Descriptor, outcomes: Outcomes) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(messages(desc))
    def run(request: Message) -> None:
        payload = request.SerializeToString()
        outcomes.record(method, *unary(channel, method, payload), request)
        if len(payload) > 2:
            outcomes.record(method, *unary(channel, method, payload[: len(payload) // 2]), request)

    run()


def _fuzz_watch(channel: grpc.Channel, outcomes: Outcomes, rng: random.Random) -> None:
    @settings(max_examples=EXAMPLES // 4, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(messages(jobs_pb2.WatchJobsRequest.DESCRIPTOR))
    def run(request: Message) -> None:
        outcomes.record(WATCH, *watch(channel, request.SerializeToString()), request)

    run()
    for _ in range(EXAMPLES // 4):
        payload = rng.randbytes(rng.randint(0, 64))
        outcomes.record(WATCH, *watch(channel, payload), payload)


def _fuzz_stream(channel: grpc.Channel, outcomes: Outcomes, rng: random.Random) -> None:
    register = agent_pb2.AgentMessage(register=agent_pb2.Register(cluster="fuzz-1"))

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.lists(messages(agent_pb2.AgentMessage.DESCRIPTOR), max_size=4), st.booleans())
    def run(bodies: list[Message], registered: bool) -> None:
        payloads = [m.SerializeToString() for m in ([register] if registered else []) + bodies]
        outcomes.record(CONNECT, *stream(channel, payloads), bodies)

    run()
    for _ in range(EXAMPLES):
        payloads = [rng.randbytes(rng.randint(0, 48)) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.5:
            payloads.insert(0, register.SerializeToString())
        outcomes.record(CONNECT, *stream(channel, payloads), payloads)
