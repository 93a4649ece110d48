"""The HyperJob kind: its children's names, labels, annotations and pod environment; bad input
refused naming the field; its phase from the children's."""

from __future__ import annotations

from typing import Any

import pytest

from vglobal.model.errors import ManifestError
from vglobal.model.forms import Member, Placement
from vglobal.model.hyperjob import HyperJob, parse_hyper_job
from vglobal.model.hyperjob_status import ChildState, hyperjob_phase
from vglobal.model.manifests import parse_manifest


def doc(**spec: Any) -> dict[str, Any]:
    template = {
        "tasks": [
            {
                "name": "worker",
                "replicas": 4,
                "template": {"spec": {"containers": [{"name": "c", "image": "x",
                             "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}},
            }
        ]
    }  # fmt: skip
    rj: dict[str, Any] = {"name": "trainer", "replicas": 3, "templateSpec": template}
    rj.update(spec.pop("rj", {}))
    return {
        "apiVersion": "training.volcano.sh/v1alpha1",
        "kind": "HyperJob",
        "metadata": {"name": "llm"},
        "spec": {"replicatedJobs": [rj], **spec},
    }


def test_children_are_named_labelled_and_carry_the_group() -> None:
    hj = parse_manifest(doc(minAvailable=2, rj={"clusterNames": ["a", "b"]}))
    assert isinstance(hj, HyperJob)
    kids = hj.children()
    assert [k.name for k in kids] == ["llm-trainer-0", "llm-trainer-1", "llm-trainer-2"]
    assert kids[1].labels == {"volcano.sh/hyperjob-name": "llm", "volcano.sh/replicatedjob-name": "trainer"}
    assert kids[2].allowed_clusters == frozenset({"a", "b"})
    assert Placement.of(kids[2]).member == Member("default/llm", 2, 3, 2)
    env = {e["name"]: e["value"] for e in kids[2].tasks[0].template["spec"]["containers"][0]["env"]}
    assert env == {
        "VGLOBAL_HYPERJOB_NAME": "llm",
        "VGLOBAL_HYPERJOB_CHILD_INDEX": "2",
        "VGLOBAL_HYPERJOB_CHILDREN": "3",
        "VGLOBAL_HYPERJOB_RANK_OFFSET": "8",
    }
    assert hj.failure_policy == "RestartChild"


def test_the_group_survives_the_stored_form() -> None:
    kid = parse_hyper_job(doc()).children()[0]
    placement = Placement.of(kid)
    assert Placement.from_json(placement.to_json()) == placement


def test_auto_split_makes_one_child_per_share() -> None:
    hj = parse_hyper_job(doc(rj={"splitPolicy": {"mode": "auto", "accelerators": 80}}))
    kids = hj.children({"trainer": [("a", 32000), ("b", 32000), ("c", 16000)]})
    assert [(k.name, k.total_pods(), k.allowed_clusters) for k in kids] == [
        ("llm-trainer-0", 4, frozenset({"a"})),
        ("llm-trainer-1", 4, frozenset({"b"})),
        ("llm-trainer-2", 2, frozenset({"c"})),
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"rj": {"replica": 1}}, "spec.replicatedJobs[0].replica"),
        ({"minAvailable": 4}, "spec.minAvailable"),
        ({"maxDomains": 0}, "spec.maxDomains"),
        ({"failurePolicy": "Retry"}, "spec.failurePolicy"),
        ({"rj": {"splitPolicy": {"mode": "auto"}}}, "spec.replicatedJobs[0].splitPolicy.accelerators"),
        ({"rj": {"splitPolicy": {"mode": "half"}}}, "spec.replicatedJobs[0].splitPolicy.mode"),
        ({"rj": {"splitPolicy": {"mode": "auto", "accelerators": 8, "acceleratorType": "x.io/npu"}}},
         "spec.replicatedJobs[0].templateSpec.tasks"),
        ({"rj": {"templateSpec": {"tasks": [{"name": "w", "replicas": -1}]}}},
         "spec.replicatedJobs[0].templateSpec.tasks[0].replicas"),
        ({"rj": {"name": "Bad_Name"}}, "spec.replicatedJobs[0].name"),
    ],
)  # fmt: skip
def test_bad_input_names_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as err:
        parse_manifest(doc(**change))
    assert field in [f for f, _ in err.value.problems]


def test_phase_from_the_children() -> None:
    def kids(*phases: str) -> list[ChildState]:
        return [ChildState(f"c{i}", "", p) for i, p in enumerate(phases)]

    assert hyperjob_phase(kids("Running", "Pending", "Pending"), 3) == "Pending"
    assert hyperjob_phase(kids("Running", "Running", "Pending"), 2) == "Running"
    assert hyperjob_phase(kids("Completed", "Completed"), 2) == "Completed"
    assert hyperjob_phase(kids("Completed", "Failed"), 2) == "Failed"
    assert hyperjob_phase(kids("Running", "Aborted"), 2) == "Aborted"
