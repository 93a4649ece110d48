"""The dashboard's pure parts: the /jobs query string both ways, CSRF checks, and the SVG figures."""

from __future__ import annotations

import pytest
from starlette.datastructures import QueryParams

from vglobal.dashboard import svg
from vglobal.dashboard.jobs_query import JobQuery, QueryError
from vglobal.dashboard.session import Caller
from vglobal.dashboard.views_login import _next
from vglobal.dashboard.views_queues import manifest, tree


def test_a_job_query_reads_back_from_the_url_it_writes() -> None:
    q = JobQuery.of(QueryParams("queue=team-a&phase=Running&q=bert&sort=-created&size=100&label=a%3D1"))
    again = JobQuery.of(QueryParams(q.url(group="cluster").removeprefix("/jobs?")))
    assert again == JobQuery(queue="team-a", phase="Running", q="bert", sort="-created", size=100,
                             label="a=1", group="cluster")  # fmt: skip
    req = q.request()
    assert (req.queue, req.phase, req.name_contains, req.sort_by, req.descending, req.page_size) == (
        "team-a", "Running", "bert", "created", True, 100)  # fmt: skip
    assert dict(req.labels) == {"a": "1"}
    assert "page=" not in q.url(page="")  # a new filter starts from the first page


@pytest.mark.parametrize(
    ("query", "field"),
    [("sort=age", "sort:"), ("group=node", "group:"), ("size=7", "size:"), ("label=x", "label:"),
     ("since=yesterday", "since:")],
)  # fmt: skip
def test_a_bad_query_value_names_its_field(query: str, field: str) -> None:
    with pytest.raises(QueryError, match=f"^{field}"):
        JobQuery.of(QueryParams(query))


def test_times_are_utc_unless_they_say_otherwise() -> None:
    req = JobQuery.of(QueryParams("since=2026-12-04T10:00&until=2026-12-04T12:00%2B02:00")).request()
    assert req.created_after.ToJsonString() == "2026-12-04T10:00:00Z"
    assert req.created_before.ToJsonString() == "2026-12-04T10:00:00Z"


def test_csrf_is_required_of_sessions_only() -> None:
    session = Caller(token="t", csrf="s3cret", session_id="sid")
    assert session.csrf_ok("s3cret")
    assert not session.csrf_ok(None) and not session.csrf_ok("") and not session.csrf_ok("s3cre")
    assert Caller(token="t").csrf_ok(None)  # a bearer request: no browser sends it by itself


def test_svg_escapes_names_and_draws_each_step() -> None:
    out = svg.dag(
        "flow <x>", [("a", "Completed", []), ("b&c", "Running", ["a"]), ("d", "Waiting", ["a", "b&c"])]
    )
    assert "<x>" not in out and "flow &lt;x&gt;" in out
    assert out.count('class="step ') == 3 and out.count('class="edge"') == 3
    assert "phase-running" in out
    bar = svg.quota("q cpu", {"allocated": 5, "deserved": 10, "capability": 20})
    assert 'width="55.0"' in bar  # 5 of the largest mark (20) over 220 px
    assert svg.plot("nothing", {}).startswith('<p class="muted">')


def test_the_queue_tree_puts_children_under_parents() -> None:
    rows = [{"name": n, "parent": p} for n, p in [("b", "root"), ("root", ""), ("a", "root"), ("a1", "a")]]
    assert [(q["name"], q["depth"]) for q in tree(rows)] == [("root", 0), ("a", 1), ("a1", 2), ("b", 1)]


def test_the_queue_form_becomes_a_volcano_queue() -> None:
    text = manifest({"name": "q", "weight": "3", "capability.nvidia.com/gpu": "8", "guarantee.cpu": "2"})
    assert "kind: Queue" in text and "nvidia.com/gpu: '8'" in text and "resource:" in text
    with pytest.raises(ValueError):
        manifest({"name": "q", "weight": "three"})


@pytest.mark.parametrize(
    ("given", "after"),
    [("/jobs?queue=training&phase=Running", "/jobs?queue=training&phase=Running"),
     ("/clusters/gpu-west", "/clusters/gpu-west"), ("//evil.example/x", "/"), ("/\\evil.example", "/"),
     ("/\t/evil.example", "/"), ("https://evil.example/", "/"), ("javascript:alert(1)", "/"),
     ("evil.example", "/"), ("/login?next=/x", "/"), ("", "/")],
)  # fmt: skip
def test_login_goes_back_only_to_a_path_of_this_site(given: str, after: str) -> None:
    assert _next(given) == after


def test_grouped_jobs_come_by_group_and_in_the_chosen_sort_within_each() -> None:
    grouped = JobQuery.of(QueryParams("group=queue&sort=-name"))
    assert (grouped.request().sort_by, grouped.request().descending) == ("queue", False)
    assert JobQuery.of(QueryParams("group=namespace&sort=name")).request().sort_by == ""
    page = [{"queue": q, "namespace": "default", "name": n} for q, n in
            [("a", "x-1"), ("a", "x-3"), ("a", "x-2"), ("b", "y-1"), ("b", "y-2")]]  # fmt: skip
    assert [r["name"] for r in grouped.in_groups(page)] == ["x-3", "x-2", "x-1", "y-2", "y-1"]
    assert JobQuery().in_groups(page) == page  # ungrouped: as the hub sent them
