"""Volcano Queues and Kubernetes PriorityClasses."""

from __future__ import annotations

from typing import Any

import pytest

from vglobal.model.errors import ManifestError
from vglobal.model.priority_class import parse_priority_class
from vglobal.model.queue import default_queue, parse_queue
from vglobal.model.resources import ResourceVector


def queue_doc(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research"},
        "spec": spec,
    }


def test_queue_defaults_are_volcanos() -> None:
    q = parse_queue(queue_doc())
    assert (q.weight, q.priority, q.reclaimable, q.parent, q.state) == (1, 0, True, "root", "Open")
    assert q.capability is None and q.deserved is None
    assert q.guarantee == ResourceVector()
    # the webhook treats weight 0 as unset
    assert parse_queue(queue_doc(weight=0)).weight == 1


def test_queue_fields() -> None:
    q = parse_queue(
        queue_doc(
            weight=3,
            priority=10,
            capability={"cpu": "64", "nvidia.com/gpu": 16},
            deserved={"cpu": "32"},
            guarantee={"resource": {"cpu": "8"}},
            reclaimable=False,
            parent="ml",
            state="Closed",
        )
    )
    assert (q.weight, q.priority, q.reclaimable, q.parent, q.state) == (3, 10, False, "ml", "Closed")
    assert q.capability == {"cpu": 64_000, "nvidia.com/gpu": 16_000}
    assert q.deserved == {"cpu": 32_000}
    assert q.guarantee == {"cpu": 8000}


def test_queue_state_may_come_from_status() -> None:
    doc = queue_doc() | {"status": {"state": "Closed"}}
    assert parse_queue(doc).state == "Closed"


def test_default_queue() -> None:
    q = default_queue()
    assert (q.name, q.weight, q.reclaimable, q.parent, q.state) == ("default", 1, True, "root", "Open")
    assert parse_queue(q.raw) == q


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        (queue_doc(weight=65536), "spec.weight", "between 1 and 65535"),
        (queue_doc(weight=-1), "spec.weight", "between 1 and 65535"),
        (queue_doc(weight="3"), "spec.weight", "must be an integer"),
        (queue_doc(capability={"cpu": "lots"}), "spec.capability.cpu", 'invalid quantity "lots"'),
        (queue_doc(deserved={"memory": "-1"}), "spec.deserved.memory", "negative"),
        (
            queue_doc(guarantee={"resource": {"nvidia.com/gpu": "x"}}),
            "spec.guarantee.resource[nvidia.com/gpu]",
            "invalid",
        ),
        (queue_doc(state="Paused"), "spec.state", '"Open" or "Closed"'),
        (queue_doc() | {"status": {"state": "Unknown"}}, "status.state", '"Open" or "Closed"'),
        (queue_doc(reclaimable="yes"), "spec.reclaimable", "true or false"),
        (queue_doc(parent="research"), "spec.parent", "its own parent"),
        (queue_doc(parent="ML"), "spec.parent", "invalid name"),
        (queue_doc(capability={"cpu": "4"}, deserved={"cpu": "8"}), "spec.deserved", "spec.capability (cpu)"),
        (
            queue_doc(capability={"cpu": "4"}, guarantee={"resource": {"cpu": "8"}}),
            "spec.guarantee.resource",
            "spec.capability (cpu)",
        ),
        (
            queue_doc(deserved={"cpu": "4"}, guarantee={"resource": {"cpu": "8"}}),
            "spec.guarantee.resource",
            "spec.deserved (cpu)",
        ),
        ({**queue_doc(), "metadata": {"name": "root"}}, "metadata.name", '"root"'),
        ({**queue_doc(), "metadata": {"name": "Research"}}, "metadata.name", "invalid name"),
        ({**queue_doc(), "metadata": {}}, "metadata.name", "required"),
    ],
)
def test_queue_validation_names_the_field(doc: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_queue(doc)
    assert info.value.field == field, info.value.problems
    assert message in info.value.message


def pc_doc(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
    } | fields


def test_priority_class() -> None:
    pc = parse_priority_class(pc_doc(value=1000, globalDefault=True, preemptionPolicy="Never"))
    assert (pc.name, pc.value, pc.global_default, pc.preemption_policy) == ("high", 1000, True, "Never")
    pc = parse_priority_class(pc_doc(value=-5))
    assert (pc.global_default, pc.preemption_policy) == (False, "PreemptLowerPriority")
    assert parse_priority_class(pc_doc(value=2_000_000_000) | {"metadata": {"name": "system-x"}}).value == 2e9


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        (pc_doc(), "value", "required"),
        (pc_doc(value="10"), "value", "must be an integer"),
        (pc_doc(value=2**31), "value", "32-bit"),
        (pc_doc(value=-(2**31) - 1), "value", "32-bit"),
        (pc_doc(value=1_000_000_001), "value", "system-"),
        (pc_doc(value=1, preemptionPolicy="Sometimes"), "preemptionPolicy", "PreemptLowerPriority"),
        (pc_doc(value=1, globalDefault="no"), "globalDefault", "true or false"),
        (pc_doc(value=1) | {"metadata": {"name": "High"}}, "metadata.name", "invalid name"),
    ],
)
def test_priority_class_validation_names_the_field(doc: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_priority_class(doc)
    assert info.value.field == field, info.value.problems
    assert message in info.value.message
