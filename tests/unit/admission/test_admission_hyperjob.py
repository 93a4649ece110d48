"""HyperJobs: every child admitted in one decision or none, one child per cluster, the queue's
limits on the whole, and the auto split of accelerators (admission/hyperjob.py)."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.admission.builders import admitted, cluster, gpus, job, reason
from tests.unit.topology.test_admission_partitions import fabric
from vglobal.admission import (
    ClusterSnap,
    GroupRef,
    NodeSnap,
    PendingJob,
    QueueSnap,
    RunningJob,
    Snapshot,
    admit,
)
from vglobal.admission.fit.hyperjob import auto_shares, split_accelerators
from vglobal.admission.fit.topology import lowest_tier
from vglobal.model.hyperjob import parse_hyper_job

Q = (QueueSnap("q"),)


def children(
    name: str, count: int, pods: int = 4, per_pod: int = 8, minimum: int | None = None, **kw: object
) -> list[PendingJob]:
    out = []
    for i in range(count):
        ref = GroupRef(f"ns/{name}", count if minimum is None else minimum, count, i)
        out.append(replace(job(f"{name}-w-{i}", "q", gpus(per_pod), pods, **kw), group=ref))  # type: ignore[arg-type]
    return out


def three() -> tuple[ClusterSnap, ...]:
    return tuple(cluster(n, 4, gpus(8)) for n in ("a", "b", "c"))


def test_three_children_go_to_three_clusters_at_once() -> None:
    result = admit(Snapshot(0, Q, three(), tuple(children("hj", 3))))
    got = admitted(result)
    assert sorted(got) == ["hj-w-0", "hj-w-1", "hj-w-2"]
    assert sorted(got.values()) == ["a", "b", "c"]


def test_one_child_that_does_not_fit_holds_back_all_naming_the_cluster() -> None:
    busy = ClusterSnap(
        "c", {}, tuple(NodeSnap(f"c-n{i}", gpus(0 if i == 0 else 8), gpus(8)) for i in range(4))
    )
    clusters = (cluster("a", 4, gpus(8)), cluster("b", 4, gpus(8)), busy)
    result = admit(Snapshot(0, Q, clusters, tuple(children("hj", 3))))
    assert admitted(result) == {}
    text = reason(result, "hj-w-0")
    assert text == reason(result, "hj-w-2")
    assert "waits whole" in text and "best: c can hold 3 of the 4 pods" in text
    assert "siblings hold a, b" in text


def test_an_ordinary_job_does_not_take_what_the_hyperjob_placed() -> None:
    # The HyperJob is decided first; the later single job finds no room and waits.
    other = job("solo", "q", gpus(8), 4, created=-5.0)
    result = admit(Snapshot(0, Q, three(), (other, *children("hj", 3))))
    assert set(admitted(result)) == {"hj-w-0", "hj-w-1", "hj-w-2"}
    assert "solo" not in admitted(result)


def test_children_share_a_cluster_only_when_no_other_holds_them() -> None:
    # Two children of 2 pods, one cluster of 4 nodes allowed: both go there.
    kids = children("hj", 2, pods=2, allowed_clusters=frozenset({"a"}))
    result = admit(Snapshot(0, Q, three(), tuple(kids)))
    assert admitted(result) == {"hj-w-0": "a", "hj-w-1": "a"}


def test_siblings_packed_together_must_fit_together() -> None:
    # Each child fits cluster a alone, but not both: with only a allowed, none is admitted.
    kids = children("hj", 2, pods=3, allowed_clusters=frozenset({"a"}))
    result = admit(Snapshot(0, Q, three(), tuple(kids)))
    assert admitted(result) == {}
    text = reason(result, "hj-w-1")
    assert "siblings hold a" in text
    # What the cluster has beside the sibling placed first (4 nodes, 3 taken by child 0).
    assert (
        "no candidate cluster is free of its siblings; beside them, best: a can hold 1 of the 3 pods" in text
    )


def test_min_available_admits_the_children_that_fit_and_the_rest_wait() -> None:
    busy = ClusterSnap("c", {}, tuple(NodeSnap(f"c-n{i}", gpus(0), gpus(8)) for i in range(4)))
    clusters = (cluster("a", 4, gpus(8)), cluster("b", 4, gpus(8)), busy)
    result = admit(Snapshot(0, Q, clusters, tuple(children("hj", 3, minimum=2))))
    assert sorted(admitted(result).values()) == ["a", "b"]
    assert "runs without it" in reason(result, "hj-w-2")


def test_a_child_left_over_follows_once_enough_run_and_avoids_its_siblings_clusters() -> None:
    kids = children("hj", 3, minimum=2)
    running = tuple(
        RunningJob(f"hj-w-{i}", "q", c, 0, 0.0, gpus(32), group="ns/hj") for i, c in ((0, "a"), (1, "b"))
    )
    result = admit(Snapshot(0, Q, three(), (kids[2],), running))
    assert admitted(result) == {"hj-w-2": "c"}


def test_the_queue_limit_applies_to_the_whole_hyperjob_and_charges_it_once() -> None:
    queues = (QueueSnap("q", capability=gpus(64)),)
    result = admit(Snapshot(0, queues, three(), tuple(children("hj", 3))))
    assert admitted(result) == {}
    assert "waits whole" in reason(result, "hj-w-0")
    ok = admit(Snapshot(0, (QueueSnap("q", capability=gpus(96)),), three(), tuple(children("hj", 3))))
    assert len(admitted(ok)) == 3
    assert ok.queues["q"].admitted == 1


def test_auto_split_fewest_clusters_first() -> None:
    free = {"a": 32000, "b": 32000, "c": 16000}
    assert split_accelerators(80000, 8000, free, None) == [("a", 32000), ("b", 32000), ("c", 16000)]
    assert split_accelerators(64000, 8000, free, None) == [("a", 32000), ("b", 32000)]
    assert split_accelerators(80000, 8000, free, 2) is None
    assert split_accelerators(20000, 8000, {"a": 12000, "b": 40000}, None) == [("b", 24000)]


def test_fair_share_charges_the_hyperjob_to_its_queue_as_one_job_of_all_its_children() -> None:
    # Three clusters of 16 GPUs. Queue a's HyperJob (two children of 16) takes two clusters; a's
    # own older job and b's job want the last one. Fair share charges a the HyperJob's 32 GPUs,
    # so b (nothing yet) goes first and a's job waits.
    queues = (QueueSnap("a"), QueueSnap("b"))
    clusters = tuple(cluster(n, 2, gpus(8)) for n in ("x", "y", "z"))
    kids = [replace(k, queue="a") for k in children("hj", 2, pods=2)]
    older = job("a-solo", "a", gpus(8), 2, created=-10.0)
    later = job("b-solo", "b", gpus(8), 2, created=5.0)
    result = admit(Snapshot(0, queues, clusters, (older, later, *kids)))
    got = admitted(result)
    assert set(got) == {"hj-w-0", "hj-w-1", "b-solo"}
    assert result.queues["a"].admitted == 1 and result.queues["b"].admitted == 1
    assert result.queues["a"].allocated == gpus(32)
    # The same cycle without the HyperJob: a's older job goes first.
    alone = admitted(admit(Snapshot(0, queues, clusters[:1], (older, later))))
    assert alone == {"a-solo": "x"}


def test_auto_split_breaks_ties_by_the_lowest_network_tier_that_holds_a_share() -> None:
    # 16 GPUs (2 pods of 8) and two clusters with 32 free each: either takes it all. a's switches
    # hold one node each (2 pods only within a tier-2 spine); b's hold two (tier 1): b wins.
    snaps = {
        "a": fabric("a", spines=2, switches=2, per_switch=1),
        "b": fabric("b", spines=1, switches=2, per_switch=2),
    }
    free = {name: 32000 for name in snaps}
    assert split_accelerators(16000, 8000, free, None) == [("a", 16000)]  # no tiers: by name

    def tier(cluster: str, share: int) -> int | None:
        return lowest_tier(snaps[cluster], ((gpus(8), share // 8000),), None)

    assert split_accelerators(16000, 8000, free, None, tier) == [("b", 16000)]
    # Both take 32 first (fewest clusters); b holds 4 pods within a tier-2 spine, a only whole.
    assert split_accelerators(48000, 8000, free, None, tier) == [("b", 32000), ("a", 16000)]
    template = {
        "tasks": [{"name": "w", "replicas": 1, "template": {"spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}}]
    }  # fmt: skip
    hj = parse_hyper_job(
        {
            "apiVersion": "training.volcano.sh/v1alpha1",
            "kind": "HyperJob",
            "metadata": {"name": "auto"},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "p",
                        "splitPolicy": {"mode": "auto", "accelerators": 16},
                        "templateSpec": template,
                    }
                ]
            },
        }
    )
    shares = auto_shares(
        hj, (lambda kind: free,), lambda c, pod, pods: lowest_tier(snaps[c], ((pod, pods),), None)
    )
    assert shares == {"p": [("b", 16000)]}
