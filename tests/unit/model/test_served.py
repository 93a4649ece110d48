"""Which workload kinds a cluster runs, as `describe cluster` tells them from its agent's labels."""

from __future__ import annotations

from vglobal.model.served import MISSING, SERVED, kinds_served, served_label


def test_a_kind_labelled_missing_is_missing_and_an_unlabelled_one_is_served() -> None:
    labels = {served_label("rayjobs.ray.io"): MISSING, served_label("deployments.apps"): SERVED}
    ok, missing = kinds_served(labels)
    assert missing == ["ray.io/v1 RayJob"]
    assert ok[0] == "batch.volcano.sh/v1alpha1 Job"  # the agent makes its pods: always served
    assert "apps/v1 Deployment" in ok and "ray.io/v1 RayCluster" in ok  # no label: served
    assert kinds_served({})[1] == []
