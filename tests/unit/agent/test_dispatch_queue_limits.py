"""The queue limits a Dispatch carries, from the queue's stored figures to the agent's local
queue: the hub's capability, guarantee and deserved less what the queue holds on the other
clusters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vglobal import convert
from vglobal.agent.snapshot import dispatch_queue_specs
from vglobal.model.records import QueueRow


def row(name: str, parent: str | None = None, **kw: Any) -> QueueRow:
    fields: dict[str, Any] = {"capability": None, "deserved": None, "guarantee": {}, "status": {}}
    fields.update(kw)
    return QueueRow(name, parent, 1, 0, "Open", True, manifest={}, created_at=datetime.now(UTC), **fields)


def test_limits_less_what_the_queue_holds_on_other_clusters() -> None:
    status = {
        "capability": {"cpu": 50_000, "memory": 100},
        "deserved": {"cpu": 30_000},
        "clusters": {"east": {"cpu": 8_000}, "west": {"cpu": 20_000, "memory": 100}},
    }
    rows = {
        "q": row("q", "eng", guarantee={"cpu": 25_000}, status=status),
        "eng": row("eng", capability={"cpu": 60_000}),
    }
    q, eng = dispatch_queue_specs(convert.dispatch_queues("q", rows, "east"))
    assert q.federated and dict(q.capability or {}) == {"cpu": 30_000, "memory": 1}  # 0 left: 1 byte
    assert dict(q.deserved or {}) == {"cpu": 10_000}
    assert dict(q.guarantee) == {"cpu": 5_000}
    # no cycle has run for eng yet: its spec capability, and no other cluster known
    assert eng.federated and dict(eng.capability or {}) == {"cpu": 60_000} and eng.parent == "root"


def test_an_unlimited_queue_stays_unlimited() -> None:
    (q,) = dispatch_queue_specs(
        convert.dispatch_queues("q", {"q": row("q", status={"capability": None})}, "east")
    )
    assert q.capability is None and not q.federated


def test_with_a_split_room_the_capability_here_is_what_it_holds_here_and_its_allowance() -> None:
    status = {
        "capability": {"cpu": 50_000},
        "clusters": {"east": {"cpu": 10_000}, "west": {"cpu": 10_000}},
        "allowance": {"east": {"cpu": 20_000}, "west": {"cpu": 10_000}},
        "here": {"east": {"cpu": 8_000}, "west": {"cpu": 10_000}},  # east: 2 cpu being evicted
    }
    rows = {"q": row("q", status=status)}
    (east,) = dispatch_queue_specs(convert.dispatch_queues("q", rows, "east"))
    (west,) = dispatch_queue_specs(convert.dispatch_queues("q", rows, "west"))
    # not the capability less what it holds elsewhere (40 cpu on each: 80 in a 50-cpu queue)
    assert dict(east.capability or {}) == {"cpu": 28_000}
    assert dict(west.capability or {}) == {"cpu": 20_000}
    # a cluster given nothing holds only what it has
    (south,) = dispatch_queue_specs(convert.dispatch_queues("q", rows, "south"))
    assert dict(south.capability or {}) == {"cpu": 1}
