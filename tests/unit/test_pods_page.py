"""The Pods page's choice of rows: fuzzy search over pod, job and node, the filters, the sort."""

from __future__ import annotations

from typing import Any

from vglobal.dashboard.views_pods import fuzzy, select


def pod(name: str, ns: str = "default", status: str = "Running", restarts: int = 0) -> dict[str, Any]:
    return {"name": name, "namespace": ns, "job": name.rsplit("-", 2)[0], "node": "n1", "status": status,
            "restarts": restarts, "cluster": "east", "task": "w", "ip": "", "cause": ""}  # fmt: skip


def test_fuzzy_is_the_letters_in_order() -> None:
    assert fuzzy("trw0", "train-worker-0") and fuzzy("TRAIN", "train-worker-0")
    assert not fuzzy("w0t", "train-worker-0")


def test_filters_then_sort() -> None:
    pods = [pod("b-w-0", restarts=2), pod("a-w-0", status="Pending"), pod("c-w-0", ns="x", restarts=1)]
    q = {"q": "", "namespace": "", "status": "", "sort": ""}
    assert [p["name"] for p in select(pods, q)] == ["a-w-0", "b-w-0", "c-w-0"]
    assert [p["name"] for p in select(pods, {**q, "sort": "-restarts"})] == ["b-w-0", "c-w-0", "a-w-0"]
    assert [p["name"] for p in select(pods, {**q, "namespace": "default", "status": "Running"})] == ["b-w-0"]
    assert [p["name"] for p in select(pods, {**q, "q": "cw"})] == ["c-w-0"]
