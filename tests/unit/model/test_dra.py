"""DRA claims read at submit: each device request of a job's ResourceClaimTemplate or ResourceClaim
is ``deviceclass/<class>`` x count per pod; a claim the job does not carry is refused naming the
field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vglobal.cli.claims import attach_claims
from vglobal.cli.documents import read_documents
from vglobal.model import dra
from vglobal.model.errors import ManifestError
from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifest
from vglobal.model.resources import ResourceVector

EXAMPLE = Path(__file__).parents[2] / "fixtures" / "dra" / "job.yaml"
DC = "deviceclass/gpu.example.com"


def _template(api: str = "resource.k8s.io/v1beta1", request: dict[str, Any] | None = None) -> dict[str, Any]:
    req = request or {"name": "gpus", "deviceClassName": "gpu.example.com", "count": 2}
    return {
        "apiVersion": api,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "two-gpus", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [req]}}},
    }


def _job(claims: list[Any] | None = None, pod_claims: list[Any] | None = None) -> dict[str, Any]:
    docs = read_documents(EXAMPLE)
    job = copy.deepcopy(next(d.body for d in docs if d.kind == "Job"))
    spec = job["spec"]["tasks"][0]["template"]["spec"]
    if pod_claims is not None:
        spec["resourceClaims"] = pod_claims
    if claims is not None:
        job["metadata"]["annotations"] = {dra.CLAIMS_ANNOTATION: json.dumps(claims)}
    return job


def _pod(job: dict[str, Any]) -> ResourceVector:
    parsed = parse_manifest(job)
    assert isinstance(parsed, Job)
    return parsed.tasks[0].pod_request


def test_the_example_file_sends_the_template_with_its_job_and_each_pod_takes_two_devices() -> None:
    docs, lines = attach_claims(read_documents(EXAMPLE))
    assert [d.kind for d in docs] == ["Queue", "Job"]
    assert lines == ["resourceclaimtemplate.resource.k8s.io/default/two-gpus travels with dra-train"]
    pod = _pod(docs[1].body)
    assert pod[DC] == 2000 and pod["cpu"] == 1000


@pytest.mark.parametrize(
    ("api", "request_"),
    [
        ("resource.k8s.io/v1beta1", {"name": "g", "deviceClassName": "gpu.example.com", "count": 3}),
        ("resource.k8s.io/v1", {"name": "g", "exactly": {"deviceClassName": "gpu.example.com", "count": 3}}),
    ],
)
def test_v1beta1_and_v1_requests_read_the_same(api: str, request_: dict[str, Any]) -> None:
    assert _pod(_job([_template(api, request_)]))[DC] == 3000


def test_allocation_mode_all_needs_at_least_one_device_and_count_defaults_to_one() -> None:
    mode_all = {"name": "g", "deviceClassName": "gpu.example.com", "allocationMode": "All"}
    assert _pod(_job([_template(request=mode_all)]))[DC] == 1000
    assert _pod(_job([_template(request={"name": "g", "deviceClassName": "gpu.example.com"})]))[DC] == 1000


def test_a_named_resource_claim_is_charged_once_and_its_pods_share_a_node() -> None:
    from vglobal.model.dra_shared import claim_label
    from vglobal.model.forms import Gang

    claim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared"},
        "spec": {"devices": {"requests": [{"name": "g", "deviceClassName": "nic.example.com"}]}},
    }
    doc = _job([claim], [{"name": "gpus", "resourceClaimName": "shared"}])
    doc["spec"]["tasks"][0]["replicas"] = 3
    doc["spec"]["minAvailable"] = 3
    job = parse_manifest(doc)
    assert isinstance(job, Job)
    task = job.tasks[0]
    nic = "deviceclass/nic.example.com"
    # one allocation: the first pod carries the device, the gang and the job's total hold it once
    assert task.pod_request[nic] == 0 and task.first_pod_extra[nic] == 1000
    assert task.request_of(0)[nic] == 1000 and task.request_of(1)[nic] == 0
    assert [(r[nic], n) for _, r, n in job.gang_shapes()] == [(1000, 1), (0, 2)]
    assert job.gang_request()[nic] == 1000 and job.total_request()[nic] == 1000
    assert sum(s.request[nic] * s.count for s in Gang.of(job).shapes) == 1000
    # the pods naming it are placed on one node: a label and a required pod affinity by hostname
    tpl = task.template
    assert tpl["metadata"]["labels"][claim_label("shared")] == "shared"
    terms = tpl["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == [
        {"labelSelector": {"matchLabels": {claim_label("shared"): "shared"}}, "topologyKey": "kubernetes.io/hostname"}
    ]
    assert len(claim_label("x" * 200)) - len("claim.vglobal.io/") <= 63


def test_a_capacity_request_takes_a_share_of_a_device_not_a_whole_one() -> None:
    share = {
        "name": "g",
        "exactly": {"deviceClassName": "gpu.example.com", "capacity": {"requests": {"memory": "20Gi"}}},
    }
    pod = _pod(_job([_template("resource.k8s.io/v1", share)]))
    assert pod[DC] == 0
    assert pod[dra.capacity_resource("gpu.example.com", "memory")] == 20 * 2**30 * 1000


def test_an_attribute_selector_is_read_and_other_cel_is_refused_naming_it() -> None:
    simple = 'device.attributes["gpu.example.com"].model == "h100"'
    assert dra.selector_of(simple) == ("gpu.example.com", "model", "h100")
    assert dra.selector_of('device.attributes["d"].mig == true') == ("d", "mig", "true")
    ok = {"name": "g", "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": simple}}]}
    assert _pod(_job([_template(request=ok)]))[DC] == 1000
    bad = {**ok, "selectors": [{"cel": {"expression": 'device.capacity["d"].memory.compareTo(quantity("1Gi")) >= 0'}}]}
    where = f"metadata.annotations[{dra.CLAIMS_ANNOTATION}][0].spec.spec.devices.requests[0].selectors[0].cel.expression"
    problems = dict(_problems(_job([_template(request=bad)])))
    assert problems[where].startswith("not supported: only device.attributes")


def _problems(job: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ManifestError) as exc:
        parse_manifest(job)
    return list(exc.value.problems)


def test_a_template_the_job_does_not_carry_is_refused_naming_the_field() -> None:
    assert _problems(_job()) == [
        (
            "spec.tasks[0].template.spec.resourceClaims[0].resourceClaimTemplateName",
            'ResourceClaimTemplate "two-gpus" is not known: apply it in the same file as the job',
        )
    ]


def test_bad_claims_are_refused_naming_each_field() -> None:
    bad = _template(request={"name": "g", "count": 0, "deviceClassName": ""})
    where = f"metadata.annotations[{dra.CLAIMS_ANNOTATION}][0].spec.spec.devices.requests[0]"
    assert (f"{where}.deviceClassName", "required") in _problems(_job([bad]))
    count = _template(request={"name": "g", "deviceClassName": "x", "count": 0})
    assert (f"{where}.count", "must be a whole number >= 1, not 0") in _problems(_job([count]))
    both = [{"name": "gpus", "resourceClaimTemplateName": "two-gpus", "resourceClaimName": "x"}]
    assert (
        "spec.tasks[0].template.spec.resourceClaims[0]",
        "needs exactly one of resourceClaimTemplateName, resourceClaimName",
    ) in _problems(_job([_template()], both))
    other = [{"name": "other", "resourceClaimTemplateName": "two-gpus"}]
    assert (
        "spec.tasks[0].template.spec.containers[0].resources.claims[0].name",
        '"gpus" is not one of the pod\'s resourceClaims',
    ) in _problems(_job([_template()], other))


def test_a_workload_kind_reads_its_pod_templates_claims_too() -> None:
    tpl = _template()
    pod = {
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}],
        "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpus"}]}}],
    }
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "default"},
        "spec": {"replicas": 2, "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod}},
    }
    assert _problems(deploy)[0][0].endswith("resourceClaims[0].resourceClaimTemplateName")
    carried = dra.attach(deploy, {("default", "ResourceClaimTemplate", "two-gpus"): tpl})
    assert _pod(carried)[DC] == 2000


def test_apply_sends_the_template_with_its_job_and_refuses_a_job_without_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from vglobal.cli.main import cli

    def apply(path: Path) -> Any:
        return CliRunner().invoke(cli, ["--hub", "127.0.0.1:9", "apply", "--dry-run=client", "-f", str(path)])

    res = apply(EXAMPLE)
    assert res.exit_code == 0, res.output
    assert "resourceclaimtemplate.resource.k8s.io/default/two-gpus travels with dra-train" in res.output
    assert "job.batch.volcano.sh/default/dra-train created (dry run)" in res.output
    alone = tmp_path / "job-without-template.yaml"
    alone.write_text(EXAMPLE.read_text().split("---\n", 1)[0] + EXAMPLE.read_text().split("---\n")[2])
    res = apply(alone)
    assert res.exit_code == 1
    assert "spec.tasks[0].template.spec.resourceClaims[0].resourceClaimTemplateName" in res.output



def test_one_text_of_a_template_and_its_job_is_one_job_as_the_hub_and_the_sim_read_it() -> None:
    from vglobal.model.manifests import parse_manifests

    parsed = parse_manifests(EXAMPLE.read_text())
    assert [type(m).__name__ for m in parsed] == ["Queue", "Job"]
    job = parsed[1]
    assert isinstance(job, Job) and job.tasks[0].pod_request[DC] == 2000
    assert dra.CLAIMS_ANNOTATION in job.raw["metadata"]["annotations"]


def test_a_capacity_no_cluster_offers_is_the_waiting_reason() -> None:
    from vglobal.admission.explain import capacity_reason
    from vglobal.admission.fit.index import ResourceIndex

    mem = dra.capacity_resource("gpu.example.com", "memory")
    index = ResourceIndex([mem, DC])
    assert "shared DRA device of class gpu.example.com with capacity memory" in capacity_reason(
        index, index.col[mem], 0, 20 * 2**30 * 1000
    )
    assert "DRA device of class gpu.example.com (no ResourceSlice" in capacity_reason(index, index.col[DC], 0, 1000)
