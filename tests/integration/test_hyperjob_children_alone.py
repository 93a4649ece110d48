"""A HyperJob's children go with their HyperJob, at the hub so every client gets it: a child is
neither cancelled nor deleted alone (FAILED_PRECONDITION naming the HyperJob, nothing changed),
and a HyperJob pinned to a cluster that does not exist is refused at submit (INVALID_ARGUMENT
naming the field and the cluster, nothing stored) unless field validation is Warn or Ignore."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
import sqlalchemy as sa

from vglobal.client import Client, VGlobalError
from vglobal.store.engine import make_sessionmaker, session_scope
from vglobal.store.repo import clusters as clusters_repo

HYPERJOB = """
apiVersion: training.volcano.sh/v1alpha1
kind: HyperJob
metadata: {name: x}
spec:
  replicatedJobs:
  - name: part
    replicas: 2
    clusterNames: %s
    templateSpec:
      tasks:
      - name: worker
        replicas: 1
        template:
          spec:
            containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def _refused(call: Callable[..., object], *args: object, **kwargs: object) -> VGlobalError:
    with pytest.raises(VGlobalError) as err:
        call(*args, **kwargs)
    return err.value


def test_a_child_is_neither_cancelled_nor_deleted_alone(client: Client) -> None:
    client.submit_job(HYPERJOB % "[]")
    for call in (client.cancel_job, client.delete_job):
        err = _refused(call, "x-part-0")
        assert err.code == grpc.StatusCode.FAILED_PRECONDITION
        assert err.message == (
            "job default/x-part-0 belongs to hyperjob default/x: delete or cancel the hyperjob"
        )
    # Nothing changed: both children are there and still Pending, the HyperJob whole.
    assert [(k.name, k.phase) for k in client.get_hyperjob("x").children] == [
        ("x-part-0", "Pending"),
        ("x-part-1", "Pending"),
    ]
    # The HyperJob's own verbs act on every child, as before.
    assert client.cancel_hyperjob("x").phase == "Aborted"
    assert len(client.delete_hyperjob("x").uids) == 2
    assert client.list_jobs() == []


def test_a_hyperjob_pinned_to_a_cluster_that_does_not_exist_is_refused(
    client: Client, engine: sa.Engine
) -> None:
    with session_scope(make_sessionmaker(engine)) as session:
        for name in ("gpu-east", "gpu-west"):
            clusters_repo.register(name, session=session, labels={}, nodes=[], free={}, stream=name)
    manifest = HYPERJOB % "[gpu-east, gpu-north]"
    for dry_run in (True, False):
        err = _refused(client.submit_job, manifest, dry_run=dry_run)
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT
        assert err.message == (
            'spec.replicatedJobs[0].clusterNames[1]: cluster "gpu-north" does not exist '
            "(clusters: gpu-east, gpu-west)"
        )
    err = _refused(client.submit_jobs, [(manifest, "")])
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and "jobs[0]: spec.replicatedJobs[0]" in err.message
    assert client.list_jobs() == [] and client.list_hyperjobs() == []

    # Clusters that exist are taken; with Warn (apply --validate=warn) an unknown one is too.
    assert len(client.submit_job(HYPERJOB % "[gpu-east, gpu-west]").hyperjob_children) == 2
    client.delete_hyperjob("x")
    warned = client.submit_job(manifest, field_validation="Warn")
    assert [k.name for k in warned.hyperjob_children] == ["x-part-0", "x-part-1"]
