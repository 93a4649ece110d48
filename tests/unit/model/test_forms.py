"""The typed forms of a job's JSON columns: built from a manifest, and the same after a trip
through the JSON the store keeps (and through the protobuf messages of vglobal.convert)."""

from __future__ import annotations

import json
from typing import Any

from vglobal import convert
from vglobal.model.forms import (
    Gang,
    Placement,
    PodPlacement,
    TaskCounts,
    placements_from_json,
    placements_to_json,
    tasks_from_json,
    tasks_to_json,
)
from vglobal.model.job import parse_job
from vglobal.model.resources import ResourceVector

DOC: dict[str, Any] = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {
        "name": "train",
        "annotations": {
            "vglobal.io/clusters": "west,east",
            "vglobal.io/cluster-selector": "region=eu",
        },
    },
    "spec": {
        "minAvailable": 3,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        "tasks": [
            {
                "name": "ps",
                "replicas": 1,
                "template": {
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
                },
            },
            {
                "name": "worker",
                "replicas": 4,
                "minAvailable": 2,
                "template": {
                    "spec": {
                        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]
                    }
                },
            },
        ],
    },
}


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


def test_the_gang_counts_each_task_min_available_with_a_pod_slot_per_pod() -> None:
    gang = Gang.of(parse_job(DOC))
    assert [(dict(s.request), s.count) for s in gang.shapes] == [
        ({"cpu": 1000, "pods": 1}, 1),
        ({"nvidia.com/gpu": 1000, "pods": 1}, 2),
    ]
    assert gang.to_json() == [[{"cpu": 1000, "pods": 1}, 1], [{"nvidia.com/gpu": 1000, "pods": 1}, 2]]
    assert Gang.from_json(through_json(gang.to_json())) == gang


def test_the_placement_keeps_allowed_clusters_selector_and_topology() -> None:
    placement = Placement.of(parse_job(DOC))
    assert placement.to_json() == {
        "clusters": ["east", "west"],
        "selector": {"region": "eu"},
        "topology": {"mode": "hard", "tier": 1, "tier_name": None},
    }
    assert Placement.from_json(through_json(placement.to_json())) == placement
    anywhere = Placement()
    assert anywhere.to_json() == {"clusters": None, "selector": {}, "topology": None}
    assert Placement.from_json({}) == anywhere


def test_task_counts_start_all_pending_and_survive_json_and_both_messages() -> None:
    counts = tuple(TaskCounts.submitted(t) for t in parse_job(DOC).tasks)
    assert counts == (TaskCounts("ps", 1, pending=1), TaskCounts("worker", 4, pending=4))
    assert tasks_from_json(through_json(tasks_to_json(counts))) == counts
    moved = TaskCounts("worker", 4, pending=1, running=1, succeeded=1, failed=1)
    assert convert.task_counts(convert.task_status(moved)) == moved


def test_a_pod_placement_names_its_task_and_holds_its_node_until_it_ends() -> None:
    pods = (
        PodPlacement("train-worker-0", "worker", "n1", "Running"),
        PodPlacement("train-worker-1", "worker", "", "Pending"),
        PodPlacement("train-ps-0", "ps", "n2", "Succeeded"),
    )
    assert [p.holds_node for p in pods] == [True, False, False]
    assert placements_from_json(through_json(placements_to_json(pods))) == pods
    assert [convert.pod_placement(convert.placement_report(p)) for p in pods] == list(pods)


def test_units_round_trip_through_the_agent_message() -> None:
    vec = ResourceVector({"cpu": 1500, "nvidia.com/gpu": 2000})
    assert convert.units_of(convert.units(vec)) == dict(vec)


def test_after_stop_marks_the_pods_gone_terminated_and_keeps_the_finished() -> None:
    from vglobal.model.forms import TERMINATED, PodPlacement, after_stop

    known = [
        PodPlacement("j-a-0", "a", "n1", "Running"),
        PodPlacement("j-a-1", "a", "n2", "Succeeded"),
        PodPlacement("j-b-0", "b", "", "Pending"),
    ]
    reported = [PodPlacement("j-a-1", "a", "n2", "Succeeded")]
    assert after_stop(known, reported) == [
        PodPlacement("j-a-0", "a", "n1", TERMINATED),
        PodPlacement("j-a-1", "a", "n2", "Succeeded"),
        PodPlacement("j-b-0", "b", "", TERMINATED),
    ]
    assert not any(p.holds_node for p in after_stop(known, reported))
    # The same report sent again (after a reconnect) changes nothing.
    assert after_stop(after_stop(known, reported), reported) == after_stop(known, reported)
