"""The hub's log of refused agents: once per peer and reason an interval, with the count between."""

from __future__ import annotations

import logging

import grpc
import pytest

from vglobal.hub.auth.refusals import RefusalLog

UNAUTH = grpc.StatusCode.UNAUTHENTICATED


def test_one_line_per_peer_and_reason_each_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    refusals = RefusalLog(interval=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="vglobal.hub.auth.refusals"):
        assert refusals.refused("10.0.0.1", UNAUTH, "the bearer token is not known to this hub")
        for _ in range(5):
            now[0] += 5.0
            assert not refusals.refused("10.0.0.1", UNAUTH, "the bearer token is not known to this hub")
        # Another peer, or another reason of the same peer, is a line of its own.
        assert refusals.refused("10.0.0.2", UNAUTH, "the bearer token is not known to this hub")
        assert refusals.refused("10.0.0.1", grpc.StatusCode.PERMISSION_DENIED, "not cluster b")
        now[0] = 61.0
        assert refusals.refused("10.0.0.1", UNAUTH, "the bearer token is not known to this hub")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4
    assert (
        lines[0]
        == "refused an agent from 10.0.0.1: UNAUTHENTICATED: the bearer token is not known to this hub"
    )
    assert lines[-1].endswith("(5 more since the last line)")


def test_a_fault_of_the_hub_is_no_refusal() -> None:
    assert not RefusalLog().refused("10.0.0.1", grpc.StatusCode.INTERNAL, "internal error")
