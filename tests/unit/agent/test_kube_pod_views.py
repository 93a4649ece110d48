"""The kube backend's one view of its two pod sources (pods it made, pods of workload objects)."""

from __future__ import annotations

from vglobal.agent.kube.backend import PodsOfBoth
from vglobal.agent.pods import PodPhase, PodStatus


def test_a_pod_is_found_in_either_source_and_counted_once() -> None:
    made = {"a": PodStatus(uid="a", phase=PodPhase.Running, node="n1")}
    workloads = {"w": PodStatus(uid="w", phase=PodPhase.Pending)}
    view = PodsOfBoth(made, workloads)
    assert view["a"].node == "n1" and view["w"].phase == PodPhase.Pending
    assert view.get("a") is made["a"] and view.get("w") is workloads["w"]
    assert view.get("gone") is None and view.get("gone", 7) == 7
    assert "a" in view and "w" in view and "gone" not in view
    assert sorted(view) == ["a", "w"] and len(view) == 2
    # Live: a pod added to a source after the view was made is seen through it.
    made["b"] = PodStatus(uid="b", phase=PodPhase.Pending)
    assert "b" in view and len(view) == 3
