"""A queue's placement for its jobs, inherited down the tree, and where a job's queue was named."""

from __future__ import annotations

from dataclasses import replace

from vglobal.model.job import Job
from vglobal.model.manifests import parse_manifest
from vglobal.model.queue_policy import QueuePolicy, inherited, sources, with_policy

CLUSTERS, PREFERENCE = "vglobal.io/clusters", "vglobal.io/cluster-preference"
SELECTOR = "vglobal.io/cluster-selector"


def test_each_setting_comes_from_the_nearest_queue_that_has_it() -> None:
    leaf: dict[str, str] = {PREFERENCE: "b"}
    parent = {CLUSTERS: "a,b", PREFERENCE: "a"}
    top = {CLUSTERS: "c", SELECTOR: "gpu=h100,region=eu"}
    assert inherited([leaf, parent, top]) == QueuePolicy(
        frozenset({"a", "b"}), ("b",), (("gpu", "h100"), ("region", "eu"))
    )
    assert inherited([{}, {}]) == QueuePolicy()


def test_a_jobs_own_placement_wins() -> None:
    policy = QueuePolicy(frozenset({"west"}), ("west", "east"), (("gpu", "h100"),))
    plain = with_policy(Job(name="j"), policy)
    assert plain.allowed_clusters == frozenset({"west"})
    assert plain.preferred_clusters == ("west", "east")
    assert plain.cluster_selector == {"gpu": "h100"}
    own = Job(
        name="j",
        allowed_clusters=frozenset({"east"}),
        preferred_clusters=("east",),
        cluster_selector={"gpu": "a100"},
    )
    assert with_policy(own, policy) == own


def _job(spec: dict[str, str]) -> Job:
    task = {"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {**spec, "tasks": [task]},
    }
    parsed = parse_manifest(doc)
    assert isinstance(parsed, Job)
    return parsed


def test_the_field_a_queue_was_named_in_is_kept() -> None:
    assert _job({}).queue_from == ""
    assert _job({"queue": "team-a"}).queue_from == "spec.queue"
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"scheduling.volcano.sh/queue-name": "team-a"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    parsed = parse_manifest(deployment)
    assert isinstance(parsed, Job)
    assert (parsed.queue, parsed.queue_from) == ("team-a", "metadata.labels[scheduling.volcano.sh/queue-name]")


def test_describe_names_the_queue_each_setting_comes_from() -> None:
    chain = [("team-a", {PREFERENCE: "b"}), ("tenants", {CLUSTERS: "a,b", PREFERENCE: "a"})]
    assert sources(chain) == {PREFERENCE: ("b", "team-a"), CLUSTERS: ("a,b", "tenants")}


def test_placement_preferences_are_inherited_setting_by_setting() -> None:
    leaf = {"vglobal.io/placement": "spread"}
    top = {"vglobal.io/tolerations": "burst", "vglobal.io/placement": "binpack", "vglobal.io/preference-wait": "5m"}
    prefs = inherited([leaf, top]).prefs
    assert (prefs.placement, [t.text for t in prefs.tolerations], prefs.wait) == ("spread", ["burst"], 300.0)
    own = Job(name="j", placement_prefs=replace(prefs, placement="binpack", tolerations=()))
    got = with_policy(own, QueuePolicy(prefs=prefs)).placement_prefs
    assert (got.placement, [t.text for t in got.tolerations]) == ("binpack", ["burst"])
