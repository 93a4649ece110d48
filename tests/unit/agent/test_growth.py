"""How many nodes of which pool a waiting gang needs beside today's free capacity."""

from __future__ import annotations

from vglobal.agent.backends.base import PoolSpec
from vglobal.agent.growth import nodes_to_add
from vglobal.model.resources import ResourceVector

GPU = "nvidia.com/gpu"


def gpus(n: int) -> ResourceVector:
    return ResourceVector({GPU: n * 1000})


def node(n: int) -> ResourceVector:
    return ResourceVector({GPU: n * 1000, "pods": 110})


def pool(name: str, per_node: int, current: int, max_: int, coming: int = 0) -> PoolSpec:
    return PoolSpec(name, node(per_node), {}, current, max_, 60.0, coming)


def test_pods_that_fit_free_capacity_need_no_node() -> None:
    assert nodes_to_add([gpus(8), gpus(8)], {"a": node(8), "b": node(8)}, [pool("p", 8, 2, 4)]) == {}


def test_the_rest_go_to_new_nodes_packed_first_fit() -> None:
    # 8 free on one node; 4 pods of 4 more: two new 8-GPU nodes hold them, not four
    got = nodes_to_add([gpus(8), gpus(4), gpus(4), gpus(4), gpus(4)], {"a": node(8)}, [pool("p", 8, 1, 9)])
    assert got == {"p": 2}


def test_pools_are_tried_by_name_and_their_room_counts_nodes_still_coming() -> None:
    pools = [pool("b-big", 8, 0, 4), pool("a-small", 8, 0, 3, coming=2)]
    assert nodes_to_add([gpus(8)] * 3, {}, pools) == {"a-small": 1, "b-big": 2}


def test_none_when_the_pools_cannot_make_room() -> None:
    assert nodes_to_add([gpus(8)] * 3, {}, [pool("p", 8, 1, 3)]) is None
    assert nodes_to_add([gpus(16)], {}, [pool("p", 8, 0, 3)]) is None  # no node of the pool is big enough
