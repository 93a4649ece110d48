"""A kind vglobal has no code for, taken through a KindDefinition (tests/fixtures/kinds): the
AppWrapper sample reads into the job its definition says (its pod set, every pod in the gang, the
queue from Kueue's label), the kube agent labels the template at its path and reads the run from
the status rules; a bad definition is refused naming the field. Records are built, not defined, so
the process's tables stay as built."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from vglobal.agent.kube.bodies import JobRef
from vglobal.agent.kube.kinds.defined import adapter
from vglobal.model.errors import ManifestError, Problems
from vglobal.model.kinds import WorkloadKind
from vglobal.model.kinds.generic import definitions, parse_path
from vglobal.model.manifests import load_documents
from vglobal.model.resources import ResourceVector

KINDS = Path(__file__).parents[2] / "fixtures" / "kinds"


def definition() -> dict[str, Any]:
    (doc,) = load_documents((KINDS / "appwrapper.kinds.yaml").read_text())
    return doc


def record(doc: dict[str, Any] | None = None) -> WorkloadKind:
    (got,) = definitions([doc or definition()], 100)
    return got


def sample() -> dict[str, Any]:
    (doc,) = load_documents((KINDS / "wrapped-job.yaml").read_text())
    return doc


def test_the_appwrapper_sample_is_the_gang_its_definition_says() -> None:
    kind = record()
    assert kind.key == ("workload.codeflare.dev/v1beta2", "AppWrapper")
    assert kind.resource == "appwrappers.workload.codeflare.dev" and not kind.long_running
    job = kind.reader(sample())
    assert [(t.name, t.replicas) for t in job.tasks] == [("job", 1)] and job.min_available == 1
    assert job.queue == "user-queue" and job.queue_from == "metadata.annotations[kueue.x-k8s.io/queue-name]"
    assert job.tasks[0].pod_request == ResourceVector.from_quantities({"cpu": "1"})


def test_a_min_available_path_and_more_replicas_make_a_smaller_gang() -> None:
    d = definition()
    d["spec"]["gang"] = {"minAvailable": "spec.minPods"}
    d["spec"]["queue"] = {"path": "spec.queueName"}
    s = sample()
    s["spec"]["components"][0]["podSets"][0]["replicas"] = 4
    s["spec"]["minPods"], s["spec"]["queueName"] = 3, "research"
    job = record(d).reader(s)
    assert job.tasks[0].replicas == 4 and job.min_available == 3 and job.queue == "research"
    assert job.tasks[0].gang_from == "spec.minPods" and job.queue_from == "spec.queueName"
    s["spec"]["minPods"] = 5
    with pytest.raises(ManifestError, match=r"spec.minPods: 5 is more than the 4 pods"):
        record(d).reader(s)


def test_the_kube_agent_labels_the_template_at_its_path_and_follows_the_status_rules() -> None:
    kind = adapter(record())
    assert kind.crd == "appwrappers.workload.codeflare.dev" and "AppWrapper controller" in kind.needs
    body = kind.body(sample(), JobRef("u1", 2, "default", "sample-job"), "owner", "vglobal")
    ((role, tmpl),) = kind.templates(body)
    assert role == "job" and tmpl["metadata"]["labels"]["vglobal.io/role"] == "job"
    assert body["spec"]["components"][0]["template"]["spec"]["template"]["spec"]["schedulerName"] == "vglobal"
    assert kind.roles_of(sample()) == ["job"]
    for phase, want in (
        ("Running", "Running"),
        ("Succeeded", "Succeeded"),
        ("Failed", "Failed"),
        ("Suspended", "Pending"),
    ):
        assert kind.phase({"status": {"phase": phase}}) == (want, "")
    assert "spec" not in kind.scale_patch(sample())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.pop("podSets"), r"document\[0\].spec.podSets: required"),
        (
            lambda s: s["podSets"][0].update(template="spec..x"),
            r"spec.podSets\[0\].template: \"spec..x\" is not a field path",
        ),
        (lambda s: s.update(gang={"all": True}), r"spec.gang: must be"),
        (lambda s: s.update(status={"done": {}}), r"spec.status: must map some of"),
        (lambda s: s.update(queue={"path": "a", "label": "b"}), r"spec.queue: must be"),
        (lambda s: s.update(apiVersion="v1"), r"spec.apiVersion: required: group/version"),
    ],
)
def test_a_bad_definition_is_refused_naming_the_field(change: Any, message: str) -> None:
    d = definition()
    change(d["spec"])
    with pytest.raises(ManifestError, match=message):
        record(copy.deepcopy(d))


def test_field_paths_read_names_and_indices() -> None:
    p = Problems()
    assert parse_path(p, "x", "spec.components[0].template") == ("spec", "components", 0, "template")
    assert parse_path(p, "x", "a[1][2]") == ("a", 1, 2) and not p
