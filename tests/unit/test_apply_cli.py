"""The CLI's parts of kubectl's apply that need no hub: -l selectors, which documents they select,
each document's live-object entry, and the kind names `vglobal scale` takes."""

from __future__ import annotations

import click
import pytest

from vglobal.cli.documents import Document
from vglobal.cli.live import LIVE, key_of, namespace_of, result
from vglobal.cli.prune import parse_selector, selected
from vglobal.cli.scale_cmd import kind_named


def doc(kind: str, api: str, name: str, **labels: str) -> Document:
    body = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "labels": labels}, "spec": {}}
    return Document(f"{name}.yaml#0", kind, name, body)


def test_selectors_parse_as_kubectl_writes_them() -> None:
    assert parse_selector("app=web, tier==db") == {"app": "web", "tier": "db"}
    for bad in ("app", "app!=web", "=web"):
        with pytest.raises(ValueError, match="expected key=value"):
            parse_selector(bad)


def test_only_documents_carrying_the_selector_are_applied() -> None:
    docs = [doc("Queue", "scheduling.volcano.sh/v1beta1", "q", team="a"), doc("Queue", "x", "r", team="b")]
    assert [d.name for d in selected(docs, {"team": "a"})] == ["q"]


def test_each_kind_has_one_live_entry_and_batch_jobs_are_not_volcano_jobs() -> None:
    vc = doc("Job", "batch.volcano.sh/v1alpha1", "a")
    batch = doc("Job", "batch/v1", "b")
    assert (key_of(vc), key_of(batch)) == ("VolcanoJob", "Job")
    assert LIVE["VolcanoJob"].resource == "job.batch.volcano.sh" and LIVE["Job"].resource == "job.batch"
    assert namespace_of(vc) == "default" and namespace_of(doc("Queue", "x", "q")) == ""
    q = doc("Queue", "scheduling.volcano.sh/v1beta1", "q")
    assert result(None, q) == "created"
    assert result({**q.body, "status": {"state": "Open"}}, q) == "unchanged"
    assert result({**q.body, "spec": {"weight": 2}}, q) == "configured"


def test_scale_takes_kubectls_kind_names() -> None:
    assert [kind_named(k) for k in ("deploy", "deployments.apps", "sts", "lws", "job")] == [
        "Deployment", "Deployment", "StatefulSet", "LeaderWorkerSet", "VolcanoJob"
    ]  # fmt: skip
    with pytest.raises(click.BadParameter, match="not a kind that scales"):
        kind_named("rayjob")
