"""Whole manifest texts: YAML streams, JSON, kinds, size limits and malformed input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vglobal.agent.backends.sim_cluster import SimCluster, parse_sim_manifests
from vglobal.model.errors import ManifestError, ManifestTooLarge
from vglobal.model.job import Job
from vglobal.model.manifests import (
    job_to_json,
    load_documents,
    manifest_to_json,
    manifest_to_yaml,
    parse_manifest,
    parse_manifests,
)
from vglobal.model.priority_class import PriorityClass
from vglobal.model.queue import Queue

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: tiny}
spec:
  tasks:
  - name: main
    replicas: 1
    template: {spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]}}
"""


def test_multi_document_yaml_in_order_with_empty_documents_skipped() -> None:
    text = (FIXTURES / "queues-and-priorities.yaml").read_text()
    out = parse_sim_manifests(text)
    assert [type(m) for m in out] == [Queue, PriorityClass, SimCluster]
    assert [m.name for m in out] == ["research", "high", "gpu-east"]
    # the hub's kinds do not include the simulator's input
    with pytest.raises(ManifestError, match='unknown kind "SimCluster"'):
        parse_manifests(text)


def test_json_object_array_and_list_kind() -> None:
    doc = load_documents(JOB)[0]
    assert [m.name for m in parse_manifests(json.dumps(doc))] == ["tiny"]
    assert len(parse_manifests(json.dumps([doc, doc]))) == 2
    listed = {"apiVersion": "v1", "kind": "List", "items": [doc, doc | {"metadata": {"name": "tiny2"}}]}
    assert [m.name for m in parse_manifests(json.dumps(listed))] == ["tiny", "tiny2"]


def test_dates_stay_strings_as_in_kubernetes() -> None:
    text = JOB.replace("metadata: {name: tiny}", "metadata: {name: tiny, labels: {since: 2024-01-01}}")
    [job] = parse_manifests(text)
    assert isinstance(job, Job) and job.labels == {"since": "2024-01-01"}
    json.dumps(job.raw)  # storable as JSON


def test_malformed_yaml_names_the_document_and_line() -> None:
    text = JOB + "---\nkind: Queue\nmetadata: {name: [unclosed\n"
    with pytest.raises(ManifestError) as info:
        parse_manifests(text)
    assert info.value.field == "document[1]"
    assert "malformed YAML at line" in info.value.message


def test_malformed_json() -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifests('{"kind": "Job",')
    assert info.value.field == "document[0]" and "malformed JSON at line 1" in info.value.message


@pytest.mark.parametrize("text", ["- a\n- b\n", "just text\n", "42\n"])
def test_a_document_must_be_a_mapping(text: str) -> None:
    with pytest.raises(ManifestError, match="must be a mapping"):
        parse_manifests(text)


def test_unknown_kind() -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest({"apiVersion": "x/v1", "kind": "Foo", "metadata": {"name": "a"}})
    assert info.value.field == "kind"
    assert info.value.message.startswith('unknown kind "Foo" (apiVersion "x/v1")')


def test_known_kind_with_another_api_version() -> None:
    # batch/v1 Job is a kind of its own (a Kubernetes Job): another version of Volcano's is refused.
    with pytest.raises(ManifestError) as info:
        parse_manifest({"apiVersion": "batch.volcano.sh/v1", "kind": "Job"})
    assert info.value.field == "apiVersion"
    assert "batch.volcano.sh/v1alpha1" in info.value.message


@pytest.mark.parametrize(
    ("doc", "field"), [({"apiVersion": "batch.volcano.sh/v1alpha1"}, "kind"), ({"kind": "Job"}, "apiVersion")]
)
def test_missing_kind_or_api_version(doc: dict[str, str], field: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(doc)
    assert (info.value.field, info.value.message) == (field, "required")


def test_oversized_text_is_too_large() -> None:
    with pytest.raises(ManifestTooLarge) as info:
        parse_manifests(JOB + "#" * 2000, max_bytes=1000)
    assert isinstance(info.value, ManifestError)
    assert "more than the limit of 1000 bytes" in str(info.value)


def test_alias_bomb_is_refused() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 8):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [{', '.join(['*' + prev] * 10)}]")
    with pytest.raises(ManifestTooLarge, match="expands to more than"):
        parse_manifests("\n".join(lines) + "\n")


def test_error_in_a_later_document_says_which_one() -> None:
    bad = JOB.replace("replicas: 1", "replicas: -1").replace("name: tiny", "name: broken")
    with pytest.raises(ManifestError) as info:
        parse_manifests(JOB + "---" + bad)
    err = info.value
    assert err.field == "spec.tasks[0].replicas"
    assert str(err) == 'document[1] (Job "broken"): spec.tasks[0].replicas: must be >= 0'


def test_serialisation_round_trips() -> None:
    [job] = parse_manifests(JOB)
    assert isinstance(job, Job)
    assert parse_manifests(manifest_to_yaml(job.raw)) == [job]
    assert parse_manifests(job_to_json(job)) == [job]
    assert manifest_to_json({"b": 1, "a": 2}) == '{"a":2,"b":1}'
