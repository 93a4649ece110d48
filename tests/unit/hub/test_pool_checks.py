"""An agent's reported node pools are checked like its nodes: a bad one is refused, naming the field."""

from __future__ import annotations

import pytest

from vglobal.api.v1 import agent_pb2 as pb
from vglobal.hub.agents.check import MAX_NODES, check_message
from vglobal.hub.errors import InvalidArgument


def register(*pools: pb.NodePool) -> pb.AgentMessage:
    return pb.AgentMessage(register=pb.Register(cluster="cloud", pools=list(pools)))


def test_a_sound_pool_passes() -> None:
    pool = pb.NodePool(name="gpu", allocatable=pb.Units(values={"cpu": 8000}), current=1, max=4, provision_seconds=120)
    assert check_message(register(pool)) == "register"


@pytest.mark.parametrize(
    ("pools", "said"),
    [
        ([pb.NodePool(current=0, max=1)], "register.pools[0].name: required"),
        ([pb.NodePool(name="g", max=1), pb.NodePool(name="g", max=1)], 'register.pools[1].name: node pool "g" is listed twice'),
        ([pb.NodePool(name="g", current=3, max=2)], "register.pools[0].max: must be >= current (3)"),
        ([pb.NodePool(name="g", max=1, provision_seconds=-1)], "register.pools[0].provision_seconds: must be a number >= 0"),
        ([pb.NodePool(name="g", max=1, provision_seconds=float("nan"))], "register.pools[0].provision_seconds"),
        ([pb.NodePool(name="g", max=MAX_NODES + 1)], "register.pools: nodes and nodes the pools can add are more than"),
        ([pb.NodePool(name="g", max=1, allocatable=pb.Units(values={"cpu": -1}))], "register.pools[0].allocatable[cpu]"),
    ],
)
def test_a_bad_pool_is_refused_naming_the_field(pools: list[pb.NodePool], said: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        check_message(register(*pools))
    assert said in str(err.value)
