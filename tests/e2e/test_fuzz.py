"""Fuzzing a running hub: hypothesis-made and random-byte requests to every RPC, the agent stream
included. Never INTERNAL (or UNKNOWN), never a traceback in the hub's log, Health answers within 1 s
throughout, and nothing is stored by a refused call."""

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
from vglobal.api.v1 import agent_pb2, clusters_pb2, jobs_pb2, queues_pb2

pytestmark = pytest.mark.e2e

BAD_CODES = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
UNARY = [
    (f"/{service.full_name}/{method.name}", method)
    for module in (jobs_pb2, queues_pb2, clusters_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
]
CONNECT = "/vglobal.v1.AgentService/Connect"
EXAMPLES = 60  # per RPC: with the random bytes and the stream, the whole test stays well under a minute


class Health:
    """Asks Health/Check every 0.2 s with a 1 s deadline while the fuzzing runs."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.failures: list[str] = []
        self.checks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with grpc.insecure_channel(self.target) as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            while not self._stop.wait(0.2):
                started = time.monotonic()
                try:
                    stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                    self.checks += 1
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
    rng = random.Random(20240613)
    started = time.monotonic()
    with Health(system.target) as health:
        for method, desc in UNARY:
            _fuzz_unary(channel, method, desc.input_type, outcomes)
            for _ in range(EXAMPLES):  # random bytes, and valid messages cut short
                payload = rng.randbytes(rng.randint(0, 64))
                outcomes.record(method, *unary(channel, method, payload), payload)
        _fuzz_stream(channel, outcomes, rng)
    took = time.monotonic() - started
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
    assert took < 90, f"the fuzzing took {took:.0f}s"


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
