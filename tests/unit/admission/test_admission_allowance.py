"""A capped queue's room beyond gangs split among its clusters (share/allowance.py): pod by pod in
job order, within every capped queue of the chain and the cluster's free room, never more in all
than the room the queue has left."""

from __future__ import annotations

from vglobal.admission.share.allowance import Elastic, split_room
from vglobal.model.resources import ResourceVector

CPU = ResourceVector({"cpu": 1000})


def elastic(uid: str, queue: str, cluster: str, pods: int, *, priority: int = 0, pod: ResourceVector = CPU) -> Elastic:
    return Elastic(uid, queue, cluster, priority, float(len(uid)), pod.scale(pods), (pod,))


PLENTY = {"east": {"cpu": 64_000}, "west": {"cpu": 64_000}}


def test_the_room_goes_to_jobs_in_order_and_adds_up_to_the_room_left() -> None:
    held = {"q": {"east": {"cpu": 2000}, "west": {"cpu": 3000}}}  # 7-cpu queue: 2 cpu left
    jobs = [elastic("b", "q", "west", 1), elastic("a", "q", "east", 3)]
    got = split_room({"q": ResourceVector({"cpu": 7000})}, {"q": "root"}, held, jobs, PLENTY)
    assert got == {"q": {"east": {"cpu": 2000}, "west": {}}}  # a (same age, first by uid) wants all of it
    # a higher priority comes first
    jobs = [elastic("b", "q", "west", 1, priority=5), elastic("a", "q", "east", 3)]
    got = split_room({"q": ResourceVector({"cpu": 7000})}, {"q": "root"}, held, jobs, PLENTY)
    assert got == {"q": {"east": {"cpu": 1000}, "west": {"cpu": 1000}}}
    jobs = [elastic("bb", "q", "west", 3, priority=5), elastic("a", "q", "east", 3)]
    got = split_room({"q": ResourceVector({"cpu": 7000})}, {"q": "root"}, held, jobs, PLENTY)
    assert got == {"q": {"east": {}, "west": {"cpu": 2000}}}


def test_whole_pods_only_and_a_full_cluster_leaves_the_room_to_the_others() -> None:
    two = ResourceVector({"cpu": 2000})
    held = {"q": {"east": {"cpu": 1000}, "west": {"cpu": 1000}}}  # 4-cpu queue: 2 cpu left
    jobs = [elastic("a", "q", "east", 2, pod=two), elastic("bb", "q", "west", 2)]
    free = {"east": {"cpu": 1000}, "west": {"cpu": 8000}}  # east cannot place a 2-cpu pod
    got = split_room({"q": ResourceVector({"cpu": 4000})}, {"q": "root"}, held, jobs, free)
    assert got == {"q": {"east": {}, "west": {"cpu": 2000}}}


def test_every_capped_queue_of_the_chain_bounds_it_and_uncapped_queues_get_none() -> None:
    parents = {"team": "root", "a": "team", "b": "team", "free": "root"}
    caps = {"team": ResourceVector({"cpu": 5000}), "a": None, "b": ResourceVector({"cpu": 4000}), "free": None}
    held = {
        "team": {"east": {"cpu": 3000}},
        "a": {"east": {"cpu": 1000}},
        "b": {"east": {"cpu": 2000}},
        "free": {"east": {"cpu": 1000}},
    }
    jobs = [elastic("x", "b", "east", 5), elastic("yy", "a", "east", 5), elastic("zzz", "free", "east", 5)]
    got = split_room(caps, parents, held, jobs, PLENTY)
    # team has 2 cpu left, b 2: b's job takes both, a's gets none; unlimited queues are not split
    assert got == {"team": {"east": {"cpu": 2000}}, "b": {"east": {"cpu": 2000}}}


def test_resources_the_capability_does_not_name_are_not_bounded() -> None:
    pod = ResourceVector({"cpu": 1000, "memory": 1 << 30})
    held = {"q": {"east": {"cpu": 1000, "memory": 1 << 30}}}
    free = {"east": {"cpu": 8000, "memory": 64 << 30}}
    got = split_room({"q": ResourceVector({"cpu": 3000})}, {"q": "root"}, held, [elastic("a", "q", "east", 5, pod=pod)], free)
    assert got == {"q": {"east": {"cpu": 2000}}}
