"""Which cluster a job goes to among those that hold it: work asking for no accelerator keeps off
GPU clusters while others hold it (keep_accelerators), and a job's ordered preference
(vglobal.io/cluster-preference) with spillover."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.unit.admission.builders import admitted, cluster, job, res
from vglobal.admission import AdmissionPolicy, ClusterSnap, QueueSnap, Snapshot, admit
from vglobal.model.errors import ManifestError
from vglobal.model.job import parse_job

GPU_NODE = res(cpu=64, gpu=8, mem_gi=512)
CPU_NODE = res(cpu=64, mem_gi=256)


def _half_full(c: ClusterSnap) -> ClusterSnap:
    """Binpack would pick it first: half its cpu taken."""
    nodes = tuple(replace(n, free=n.free - res(cpu=32)) for n in c.nodes)
    return replace(c, nodes=nodes)


def _snap(pending: list, clusters: tuple[ClusterSnap, ...], **policy: object) -> Snapshot:
    return Snapshot(
        now=100.0, queues=(QueueSnap("q"),), clusters=clusters, pending=tuple(pending),
        policy=AdmissionPolicy(**policy),  # type: ignore[arg-type]
    )


def test_cpu_work_keeps_off_gpu_clusters_while_a_cpu_cluster_holds_it() -> None:
    clusters = (_half_full(cluster("gpu", 2, GPU_NODE)), cluster("cpu", 2, CPU_NODE))
    jobs = [job("etl", "q", res(cpu=16), 2, created=1), job("train", "q", res(cpu=8, gpu=4), 1, created=2)]
    assert admitted(admit(_snap(jobs, clusters))) == {"etl": "cpu", "train": "gpu"}
    # the old rule (binpack alone) sends it to the fuller GPU cluster
    assert admitted(admit(_snap(jobs, clusters, keep_accelerators=False)))["etl"] == "gpu"


def test_cpu_work_spills_onto_gpu_clusters_when_the_cpu_ones_are_full() -> None:
    clusters = (cluster("gpu", 1, GPU_NODE), cluster("cpu", 1, CPU_NODE))
    jobs = [job(f"etl{i}", "q", res(cpu=48), 1, created=i) for i in range(2)]
    assert admitted(admit(_snap(jobs, clusters))) == {"etl0": "cpu", "etl1": "gpu"}


def test_a_preferred_cluster_first_then_the_next_then_any() -> None:
    clusters = (cluster("on-prem-a", 1, CPU_NODE), cluster("on-prem-b", 1, CPU_NODE), cluster("cloud", 4, CPU_NODE))
    prefer = ("on-prem-a", "on-prem-b")
    jobs = [job(f"j{i}", "q", res(cpu=48), 1, created=i, preferred_clusters=prefer) for i in range(4)]
    got = admitted(admit(_snap(jobs, clusters)))
    assert got == {"j0": "on-prem-a", "j1": "on-prem-b", "j2": "cloud", "j3": "cloud"}
    # an allow-list still rules: a preferred cluster the job may not use is passed over
    only_b = [job("k", "q", res(cpu=8), 1, preferred_clusters=prefer, allowed_clusters=frozenset({"on-prem-b", "cloud"}))]
    assert admitted(admit(_snap(only_b, clusters))) == {"k": "on-prem-b"}


@pytest.mark.parametrize("value", ["a,,b,a", "Bad_Name"])
def test_a_bad_preference_is_refused_naming_the_annotation(value: str) -> None:
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {"vglobal.io/cluster-preference": value}},
        "spec": {"tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]},
    }
    with pytest.raises(ManifestError) as err:
        parse_job(doc)
    assert err.value.field == "metadata.annotations[vglobal.io/cluster-preference]"


def test_the_preference_survives_the_stored_facts() -> None:
    from vglobal.model.forms import Placement

    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {"vglobal.io/cluster-preference": "b, a"}},
        "spec": {"tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]},
    }
    placement = Placement.of(parse_job(doc))
    assert placement.preferred == ("b", "a")
    assert Placement.from_json(placement.to_json()).preferred == ("b", "a")
