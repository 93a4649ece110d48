"""ListJobs' filters, sort keys and pages, and CountJobs, through the real API on a real Postgres,
checked against a brute-force reading of every job; roles and bad input."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
import sqlalchemy as sa

from tests.integration.secure_hub import SecureHub
from tests.integration.test_auth_api import code_of, job, queue
from vglobal.api.v1 import jobs_pb2
from vglobal.client import Client, VGlobalError
from vglobal.hub.server import Hub

QUEUES = ["default", "team-a", "team-b"]
# (job phase, binding phase, on a cluster)
STATES = [
    ("Pending", "Suspended", False),
    ("Running", "Running", True),
    ("Pending", "Bound", True),
    ("Completed", "Succeeded", True),
    ("Failed", "Failed", True),
    ("Aborted", "Aborted", False),
]
T0 = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def many(follower: tuple[Hub, sa.Engine]) -> Iterator[tuple[Client, list[jobs_pb2.Job]]]:
    """45 jobs over three queues and namespaces, in every phase, some on clusters, created three
    at a time (equal times: the uid breaks ties), by four users; on a hub that never dispatches."""
    hub, engine = follower
    rng = random.Random(21)
    with Client(f"127.0.0.1:{hub.port}", timeout=10, retries=1) as c:
        for q in QUEUES[1:]:
            c.apply_queue(queue(q))
        for i in range(45):
            name = f"{'bert' if i % 4 == 0 else 'gpt'}{i:03d}x"
            c.submit_job(
                job(name, QUEUES[i % 3]).replace("metadata: {", f"metadata: {{namespace: ns{i % 3}, ")
            )
        with engine.begin() as conn:
            for i, uid in enumerate(conn.execute(sa.text("SELECT uid FROM jobs ORDER BY name")).scalars()):
                phase, binding, placed = rng.choice(STATES)
                values = {
                    "p": phase,
                    "b": binding,
                    "c": f"c{rng.randrange(2)}" if placed else None,
                    "t": T0 + timedelta(minutes=i // 3),
                    "by": f"user{i % 4}",
                    "u": uid,
                }
                conn.execute(
                    sa.text("UPDATE jobs SET phase = :p, created_at = :t, submitted_by = :by WHERE uid = :u"),
                    values,
                )
                conn.execute(
                    sa.text(
                        "UPDATE resource_bindings SET phase = :b, cluster = :c, "
                        "finished_at = CASE WHEN :b IN ('Succeeded', 'Failed', 'Aborted') "
                        "  THEN CAST(:t AS timestamptz) END "
                        "WHERE job_uid = :u"
                    ),
                    values,
                )
        yield c, c.list_jobs()


def keys(sort_by: str) -> Callable[[jobs_pb2.Job], Any]:
    return {
        "name": lambda j: j.name,
        "created": lambda j: j.created_at.ToDatetime(),
        "phase": lambda j: j.phase,
        "queue": lambda j: j.queue,
        "cluster": lambda j: j.cluster,
    }[sort_by]


@pytest.mark.parametrize("sort_by", ["name", "created", "phase", "queue", "cluster"])
@pytest.mark.parametrize("descending", [False, True])
def test_every_sort_key_pages_through_every_job_once_in_order(
    many: tuple[Client, list[jobs_pb2.Job]], sort_by: str, descending: bool
) -> None:
    c, everything = many
    key = keys(sort_by)
    expected = sorted(everything, key=lambda j: (key(j), j.uid), reverse=descending)
    pages = list(c.job_pages(7, sort_by=sort_by, descending=descending))
    assert [len(p) for p in pages] == [7] * 6 + [3]
    assert [j.uid for p in pages for j in p] == [j.uid for j in expected]


def test_filters_match_a_brute_force_reading(many: tuple[Client, list[jobs_pb2.Job]]) -> None:
    c, everything = many
    after, before = T0 + timedelta(minutes=3), T0 + timedelta(minutes=9)

    def created(j: jobs_pb2.Job) -> datetime:
        return j.created_at.ToDatetime(tzinfo=UTC)

    cases: list[tuple[dict[str, Any], Callable[[jobs_pb2.Job], bool]]] = [
        ({"name_contains": "BERT"}, lambda j: "bert" in j.name),
        ({"name_contains": "t01"}, lambda j: "t01" in j.name),
        ({"submitted_by": "user2"}, lambda j: j.submitted_by == "user2"),
        ({"created_after": after}, lambda j: created(j) >= after),
        ({"created_after": after, "created_before": before}, lambda j: after <= created(j) < before),
        ({"queue": "team-a", "phase": "Running"}, lambda j: j.queue == "team-a" and "Running" in (j.phase, j.binding_phase)),
        ({"phase": "Failed", "submitted_by": "user1"}, lambda j: "Failed" in (j.phase, j.binding_phase) and j.submitted_by == "user1"),
        ({"namespace": "ns1", "cluster": "c1"}, lambda j: j.namespace == "ns1" and j.cluster == "c1"),
        ({"finished_after": after}, lambda j: j.HasField("finished_at") and j.finished_at.ToDatetime(tzinfo=UTC) >= after),
        ({"name_contains": "gpt", "queue": "default", "created_before": before}, lambda j: "gpt" in j.name and j.queue == "default" and created(j) < before),
    ]  # fmt: skip
    for query, wanted in cases:
        expected = sorted(
            (j for j in everything if wanted(j)), key=lambda j: (created(j), j.uid), reverse=True
        )
        assert expected, query  # each case selects something
        got = [j.uid for p in c.job_pages(4, sort_by="created", descending=True, **query) for j in p]
        assert got == [j.uid for j in expected], query
        counted = c.count_jobs(**query)
        assert counted.total == len(expected) and [g.count for g in counted.groups] == [len(expected)], query


@pytest.mark.parametrize(
    "group_by",
    [["queue"], ["phase", "queue", "cluster"], ["binding_phase", "namespace"], ["cluster", "phase"]],
)
def test_counts_equal_a_brute_force_count(
    many: tuple[Client, list[jobs_pb2.Job]], group_by: list[str]
) -> None:
    c, everything = many
    for query in ({}, {"queue": "team-b"}, {"name_contains": "bert", "phase": "Succeeded"}):
        resp = c.count_jobs(group_by, **query)
        listed = c.list_jobs(**query)
        expected = Counter(tuple(getattr(j, g) for g in group_by) for j in listed)
        got = {tuple(getattr(g, f) for f in group_by): g.count for g in resp.groups}
        assert got == dict(expected), query
        assert [tuple(getattr(g, f) for f in group_by) for g in resp.groups] == sorted(got)
        assert resp.total == len(listed)
    assert c.count_jobs().total == len(everything) == 45


def test_a_token_is_for_the_order_it_was_given_in(many: tuple[Client, list[jobs_pb2.Job]]) -> None:
    c, _ = many
    first = c.job_page(5, sort_by="name")
    second = c.job_page(5, first.next_page_token, sort_by="name")
    assert [j.name for j in [*first.jobs, *second.jobs]] == sorted(j.name for j in c.list_jobs())[:10]
    for token, other in ((first.next_page_token, {"sort_by": "created"}), (first.next_page_token, {}),
                         (c.job_page(5).next_page_token, {"sort_by": "name"}),
                         (first.next_page_token, {"sort_by": "name", "descending": True})):  # fmt: skip
        with pytest.raises(VGlobalError) as err:
            c.job_page(5, token, **other)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in err.value.message


def test_bad_input_is_invalid_argument_naming_the_field(many: tuple[Client, list[jobs_pb2.Job]]) -> None:
    c, _ = many
    bad: list[tuple[Callable[[], object], str]] = [
        (lambda: c.job_page(5, sort_by="size"), "sort_by"),
        (lambda: c.job_page(5, "not-a-token"), "page_token"),
        (lambda: c.job_page(-1), "page_size"),
        (lambda: c.count_jobs(["phase", "colour"]), "group_by[1]"),
        (lambda: c.count_jobs(["queue", "queue"]), "group_by[1]"),
        (lambda: c.job_page(5, created_after=T0, created_before=T0), "created_before"),
        (lambda: c.count_jobs(created_after=T0, created_before=T0 - timedelta(days=1)), "created_before"),
        (lambda: c.queue_history(max_samples=-1), "max_samples"),
        (lambda: c.queue_history(since=T0, until=T0), "since"),
    ]
    for call, field in bad:
        with pytest.raises(VGlobalError) as err:
            call()
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT, field
        assert err.value.message.startswith(field), err.value.message
    with pytest.raises(VGlobalError) as err:
        c.queue_history("no-such-queue")
    assert err.value.code == grpc.StatusCode.NOT_FOUND


@pytest.fixture
def teams(secure: SecureHub) -> SecureHub:
    with secure.client("olga") as ops:
        ops.apply_queue(queue("team-a"))
        ops.apply_queue(queue("team-b"))
    with secure.client("alice") as alice:
        alice.submit_job(job("a1", "team-a"))
        alice.submit_job(job("a2", "team-a"))
    with secure.client("bob") as bob:
        bob.submit_job(job("b1", "team-b"))
    return secure


def test_a_viewer_of_one_queue_counts_and_lists_only_its_jobs(teams: SecureHub) -> None:
    with teams.client("ada") as ada:
        assert {(j.name, j.submitted_by) for j in ada.list_jobs()} == {
            ("a1", "alice"),
            ("a2", "alice"),
            ("b1", "bob"),
        }
        assert [j.name for j in ada.list_jobs(submitted_by="bob")] == ["b1"]
        assert {(g.queue, g.count) for g in ada.count_jobs(["queue"]).groups} == {
            ("team-a", 2),
            ("team-b", 1),
        }
    with teams.client("vera") as vera:  # a viewer of team-a* only
        counts = vera.count_jobs(["queue", "phase"])
        assert [(g.queue, g.phase, g.count) for g in counts.groups] == [("team-a", "Pending", 2)]
        assert counts.total == 2
        assert vera.count_jobs(queue="team-b").total == 0
        assert [j.name for j in vera.list_jobs(submitted_by="bob")] == []
        assert [j.name for j in vera.list_jobs(sort_by="name", descending=True)] == ["a2", "a1"]
        assert [d.generation for d in vera.job_dispatches("a1")] == []  # readable, never dispatched
        assert code_of(lambda: vera.job_dispatches("b1")) == grpc.StatusCode.PERMISSION_DENIED
        assert code_of(lambda: vera.queue_history("team-b")) == grpc.StatusCode.PERMISSION_DENIED
    from vglobal.hub.queue_history import sample_queues

    sample_queues(teams.hub.ctx)
    with teams.client("vera") as vera:
        assert [h.name for h in vera.queue_history()] == ["team-a"]
        (sample,) = vera.queue_history("team-a")[0].samples
        assert sample.pending_jobs == 2
    with teams.client("vic") as vic:  # a viewer everywhere
        assert [h.name for h in vic.queue_history()] == ["default", "team-a", "team-b"]
