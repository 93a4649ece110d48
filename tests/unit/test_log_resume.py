"""A followed log stream's resume: the next call starts at the earliest pod's last line time and
each pod's lines it already had are dropped, even several at one same time."""

from __future__ import annotations

import grpc

from vglobal.api.v1 import jobs_pb2
from vglobal.sdk.log_resume import Resume, stamp_ns


def test_stamps_read_as_the_api_writes_them() -> None:
    assert stamp_ns("1970-01-01T00:00:01Z") == 1_000_000_000
    assert stamp_ns("1970-01-01T00:00:01.5Z") == 1_500_000_000
    assert stamp_ns("1970-01-01T00:00:01.000000007Z") == 1_000_000_007
    assert stamp_ns("1970-01-01T01:00:01.25+01:00") == 1_250_000_000
    assert stamp_ns("hello") is None


def test_resume_drops_what_it_had_and_keeps_what_is_new() -> None:
    first = jobs_pb2.LogsRequest(follow=True, tail_lines=5, since_seconds=60)
    r = Resume(first)
    req = r.request()
    assert req.timestamps and req.tail_lines == 5 and not req.since_time  # the first call as asked
    t1, t2, t3 = "2026-01-01T00:00:01.1Z", "2026-01-01T00:00:02.2Z", "2026-01-01T00:00:03.3Z"
    assert list(r.lines("a", [f"{t1} a1", f"{t2} a2", f"{t2} a2b"])) == ["a1", "a2", "a2b"]
    assert list(r.lines("b", [f"{t1} b1"])) == ["b1"]

    again = r.request()
    assert again.since_time == t1 and again.tail_lines == 0 and again.since_seconds == 0
    # The cluster sends again from t1: a's first three and b's first are dropped, the rest kept.
    assert list(r.lines("a", [f"{t1} a1", f"{t2} a2", f"{t2} a2b", f"{t2} a2c", f"{t3} a3"])) == [
        "a2c",
        "a3",
    ]
    assert list(r.lines("b", [f"{t1} b1", f"{t3} b3"])) == ["b3"]
    assert list(r.lines("c", [f"{t1} c1"])) == ["c1"]  # a pod not seen before: all of it


def test_timestamps_kept_when_asked_and_retry_only_on_unavailable() -> None:
    r = Resume(jobs_pb2.LogsRequest(follow=True, timestamps=True), window=0.0)
    assert list(r.lines("a", ["2026-01-01T00:00:01Z x"])) == ["2026-01-01T00:00:01Z x"]
    assert r.retry(grpc.StatusCode.PERMISSION_DENIED) is None
    assert r.retry(grpc.StatusCode.UNAVAILABLE) is not None  # the first break: at once
    assert r.retry(grpc.StatusCode.UNAVAILABLE) is None  # the window (0 s here) is over


def test_the_cluster_is_asked_from_the_whole_second_and_the_sim_to_the_microsecond() -> None:
    from vglobal.agent.backends.sim_logs import since_time
    from vglobal.agent.kube.logs import log_query
    from vglobal.api.v1 import agent_pb2

    req = agent_pb2.LogRequest(follow=True, timestamps=True, since_time="2026-01-01T00:00:01.123456789Z")
    assert log_query(req) == [("follow", "true"), ("timestamps", "true"), ("sinceTime", "2026-01-01T00:00:01Z")]
    assert since_time(req.since_time) == 1767225601.123456
    assert since_time("2026-01-01T00:00:01Z") == 1767225601.0


def test_a_follower_makes_only_the_lines_it_lacks() -> None:
    from vglobal.agent.backends.sim_logs import written

    notes = {"vglobal.io/sim-log": "a\nb", "vglobal.io/sim-log-interval": "1s"}
    every = written(notes, "p", "n", 100.0, 105.5)
    assert [x for _, x in every] == ["a", "b", *(f"p on n: step {k}" for k in range(1, 6))]
    for skip in range(len(every) + 2):
        assert written(notes, "p", "n", 100.0, 105.5, skip) == every[skip:]
