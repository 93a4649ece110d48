"""A Queue's spec.affinity (node groups): parsed, checked field by field, and read back."""

from __future__ import annotations

from typing import Any

import pytest

from vglobal.model.errors import ManifestError
from vglobal.model.fields import unknown_fields
from vglobal.model.queue import QueueManifest, parse_queue
from vglobal.model.queue_affinity import QueueAffinity, affinity_from_manifest

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def doc(affinity: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q1"},
        "spec": {"affinity": affinity},
    }


def test_affinity_parsed_in_order() -> None:
    q = parse_queue(
        doc(
            {
                "nodeGroupAffinity": {REQ: ["g1"], PREF: ["g3", "g2"]},
                "nodeGroupAntiAffinity": {REQ: ["g4"], PREF: ["g5"]},
            }
        )
    )
    assert q.affinity == QueueAffinity(("g1",), ("g3", "g2"), ("g4",), ("g5",))
    assert affinity_from_manifest(q.raw) == q.affinity
    assert parse_queue(doc(None)).affinity is None
    assert parse_queue(doc({})).affinity == QueueAffinity()
    assert QueueAffinity().empty


def test_admits_as_the_nodegroup_predicate() -> None:
    aff = QueueAffinity(("g1",), ("g2",), ("g1", "g3"), ("g4",))
    # anti-affinity required beats affinity; preferred anti-affinity still admits
    assert [aff.admits(g) for g in ("g1", "g2", "g3", "g4", "g5", None)] == [
        False,
        True,
        False,
        True,
        False,
        False,
    ]
    assert QueueAffinity(("g1",)).to_manifest() == {"nodeGroupAffinity": {REQ: ["g1"], PREF: []}}


@pytest.mark.parametrize(
    ("affinity", "field", "message"),
    [
        ("g1", "spec.affinity", "must be a mapping"),
        ({"nodeGroupAffinity": {REQ: "g1"}}, f"spec.affinity.nodeGroupAffinity.{REQ}", "must be a list"),
        (
            {"nodeGroupAntiAffinity": {PREF: [3]}},
            f"spec.affinity.nodeGroupAntiAffinity.{PREF}[0]",
            "must be a string",
        ),
        (
            {"nodeGroupAffinity": {REQ: ["ok", "-bad"]}},
            f"spec.affinity.nodeGroupAffinity.{REQ}[1]",
            "label value",
        ),
        ({"nodeGroupAffinity": {REQ: [""]}}, f"spec.affinity.nodeGroupAffinity.{REQ}[0]", "label value"),
    ],
)
def test_bad_affinity_names_the_field(affinity: Any, field: str, message: str) -> None:
    with pytest.raises(ManifestError) as err:
        parse_queue(doc(affinity))
    assert field in str(err.value) and message in str(err.value)


def test_unknown_affinity_keys_are_unknown_fields() -> None:
    got = unknown_fields(QueueManifest, doc({"nodeGroupAffinity": {"required": ["g1"]}, "podAffinity": {}}))
    assert got == ["spec.affinity.nodeGroupAffinity.required", "spec.affinity.podAffinity"]
