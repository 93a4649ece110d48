"""A job is named in messages by the kind it was submitted as, as kubectl prints it."""

from __future__ import annotations

import pytest

from vglobal.model.kinds import KINDS, printed_as


@pytest.mark.parametrize(
    ("shown", "printed"),
    [
        ("VolcanoJob", "job.batch.volcano.sh/default/x"),
        ("Deployment", "deployment.apps/default/x"),
        ("StatefulSet", "statefulset.apps/default/x"),
        ("RayCluster", "raycluster.ray.io/default/x"),
        ("Job", "job.batch/default/x"),
        ("", "job.batch.volcano.sh/default/x"),  # a job from a hub that does not say its kind
    ],
)
def test_printed_as(shown: str, printed: str) -> None:
    assert printed_as(shown, "default", "x") == printed


def test_every_kind_has_its_own_printed_name() -> None:
    assert len({k.printed for k in KINDS}) == len(KINDS)
