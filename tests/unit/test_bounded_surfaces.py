"""The small pieces behind the hardened surfaces, each against the real thing it guards: the
metrics server's timeouts and connection cap on real sockets, the per-caller watch share, strict
parsing of dashboard inputs, Host names, and which refusals the SDK never retries."""

from __future__ import annotations

import socket
import time
import urllib.request
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry, Counter

from vglobal import metrics_http
from vglobal.dashboard.guards import allowed_hosts, host_name
from vglobal.dashboard.inputs import BadInput, digits, timestamp
from vglobal.hub.errors import HubError
from vglobal.hub.watch.stream import WatchesBusy, WatchLimit
from vglobal.sdk.retries import hopeless, retryable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def metrics() -> Any:
    registry = CollectorRegistry()
    Counter("probe_total", "a probe", registry=registry).inc()
    port = free_port()
    server = metrics_http.serve(f"127.0.0.1:{port}", registry, read_timeout=1.0, most=3)
    yield port
    server.shutdown()
    server.server_close()


def test_metrics_are_served_and_a_silent_connection_is_closed(metrics: int) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=10) as r:
        assert b"probe_total 1.0" in r.read()
    with socket.create_connection(("127.0.0.1", metrics), timeout=30) as s:
        started = time.monotonic()
        assert s.recv(1) == b""  # the server hung up on a client that sent nothing
        assert time.monotonic() - started < 20


def test_metrics_connections_past_the_cap_are_closed_at_once() -> None:
    port = free_port()
    server = metrics_http.serve(f"127.0.0.1:{port}", CollectorRegistry(), read_timeout=60.0, most=3)
    held = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(3)]
    try:
        # Accepted in order after the three; well under the read timeout, only the cap closes it.
        with socket.create_connection(("127.0.0.1", port), timeout=30) as extra:
            assert extra.recv(1) == b""
    finally:
        for s in held:
            s.close()
        server.shutdown()
        server.server_close()


def test_metrics_answer_nothing_but_get(metrics: int) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{metrics}/metrics", data=b"x" * 10, method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(req, timeout=10)
    assert caught.value.code == 501


def test_one_caller_holds_only_its_share_of_the_watches() -> None:
    limit = WatchLimit(8, 2)
    limit.enter("alice")
    limit.enter("alice")
    with pytest.raises(WatchesBusy) as caught:
        limit.enter("alice")
    assert isinstance(caught.value, HubError) and caught.value.wait > 0
    assert "share" in str(caught.value)
    for who in ("bob", "bob", "carl", "dora", "eve", "fay"):
        limit.enter(who)
    with pytest.raises(WatchesBusy, match="8 watches at once"):
        limit.enter("carol")
    limit.leave("alice")
    limit.enter("carol")


@pytest.mark.parametrize("raw", ["²", "٣", "1" * 19, "-1", "1e3", " 1", "0x10"])
def test_digits_are_ascii_and_bounded(raw: str) -> None:
    with pytest.raises(BadInput, match=r"^rev: "):
        digits("rev", raw)


def test_digits_accept_plain_numbers() -> None:
    assert digits("rev", "") is None
    assert digits("rev", "0") == 0
    assert digits("rev", "9" * 18) == 10**18 - 1


@pytest.mark.parametrize(
    "text", ["0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00", "junk", "2026-13-01T00:00"]
)
def test_times_outside_a_timestamp_are_refused(text: str) -> None:
    with pytest.raises(BadInput, match=r"^since: "):
        timestamp("since", text)


def test_times_inside_are_taken_as_utc() -> None:
    stamp = timestamp("since", "2026-12-04T10:00")
    assert stamp is not None and stamp.ToJsonString() == "2026-12-04T10:00:00Z"
    assert timestamp("since", "0001-01-01T00:00") is not None


def test_host_names() -> None:
    assert host_name("LocalHost:8080") == "localhost"
    assert host_name("[::1]:8080") == "::1"
    assert host_name("rebind.test") == "rebind.test"
    hosts = allowed_hosts("0.0.0.0", ["dash.example.com:443"])
    assert hosts == {"localhost", "127.0.0.1", "::1", "dash.example.com"}
    assert "10.1.2.3" in allowed_hosts("10.1.2.3", [])


class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str, trailers: tuple[tuple[str, str], ...] = ()) -> None:
        self._code, self._details, self._trailers = code, details, trailers

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> Any:
        return self._trailers


def test_the_sdk_never_retries_a_request_too_large_to_pass() -> None:
    too_big = FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, "received metadata size exceeds hard limit")
    assert hopeless(too_big) and not retryable(too_big)
    busy = FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, "over its rate limit", (("retry-after-ms", "50"),))
    assert not hopeless(busy) and retryable(busy)
    assert retryable(FakeRpcError(grpc.StatusCode.UNAVAILABLE, "down"))
