"""A queue's vglobal.io/overcommit-factor (inherited down the tree) replaces the overcommit plugin's
factor for its jobs at enqueue: Volcano's overcommit, queue-scoped."""

from __future__ import annotations

import pytest

from tests.unit.scheduler.sched_table import Case, Group, conf, node, pod, queue
from vglobal.model.errors import ManifestError, Problems
from vglobal.model.queue_policy import check_queue_policy
from vglobal.model.queue_tuning import OVERCOMMIT_ANNOTATION, queue_half_lives


def _enqueue(queues: list, leaf: str, phase_b: str) -> None:  # type: ignore[type-arg]
    """Two gangs of three one-cpu pods on four cpus: 6 > 4 x 1.2 (the plugin's default), so the
    second waits, unless the queue's factor lets 6 <= 4 x factor."""
    groups = [
        Group("c1/a", leaf, min_member=3, phase="Pending"),
        Group("c1/b", leaf, min_member=3, phase="Pending"),
    ]
    pods = [pod(f"c1/a-{i}", "c1/a") for i in range(3)] + [pod(f"c1/b-{i}", "c1/b") for i in range(3)]
    Case(
        "enqueue",
        [node("n1", "4", "64Gi")],
        groups,
        pods,
        queues,
        conf("enqueue", ["gang"], ["overcommit"]),
        phases={"c1/a": "Inqueue", "c1/b": phase_b},
    ).check()


def test_a_queue_factor_of_its_own_admits_more() -> None:
    _enqueue([queue("q")], "q", "Pending")
    _enqueue([queue("q", annotations={OVERCOMMIT_ANNOTATION: "1.5"})], "q", "Inqueue")


def test_a_queue_takes_its_nearest_ancestors_factor() -> None:
    parent = queue("p", annotations={OVERCOMMIT_ANNOTATION: "2"})
    _enqueue([parent, queue("mid", parent="p"), queue("q", parent="mid")], "q", "Inqueue")
    own = queue("q", parent="mid", annotations={OVERCOMMIT_ANNOTATION: "1.2"})
    _enqueue([parent, queue("mid", parent="p"), own], "q", "Pending")


@pytest.mark.parametrize(
    ("key", "value"),
    [(OVERCOMMIT_ANNOTATION, "0.5"), (OVERCOMMIT_ANNOTATION, "lots"), ("vglobal.io/fair-share-half-life", "1 day")],
)
def test_a_bad_queue_setting_is_refused_naming_the_annotation(key: str, value: str) -> None:
    p = Problems()
    check_queue_policy(p, {key: value})
    with pytest.raises(ManifestError, match=key.replace(".", r"\.")):
        p.raise_if_any()


def test_half_lives_are_inherited_down_the_tree() -> None:
    notes = {
        "org": (None, {"vglobal.io/fair-share-half-life": "1h"}),
        "team": ("org", {}),
        "fast": ("team", {"vglobal.io/fair-share-half-life": "10m"}),
        "other": (None, {}),
    }
    assert queue_half_lives(notes) == {"org": 3600.0, "team": 3600.0, "fast": 600.0}
