"""What an agent may say: every message of its stream checked before anything is recorded.

A bad message is refused with INVALID_ARGUMENT naming the field (``register.nodes[3].free[cpu]``);
at most 20 problems are listed. Quantities are bounded like a manifest's, so an agent's numbers
cannot overflow the 64-bit sums admission makes over a cluster's nodes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from vglobal.api.v1 import agent_pb2
from vglobal.hub.errors import InvalidArgument
from vglobal.model.errors import Problems, bounded_list
from vglobal.model.k8s import check_name
from vglobal.model.phases import JobPhase
from vglobal.model.quantity import MAX_UNITS

MAX_NODES = 100_000
INT32_MAX = 2**31 - 1
# Agent event times: from the epoch to the year 2200, in seconds.
MAX_EVENT_TIME = 7_258_118_400.0
JOB_PHASES = frozenset(p.value for p in JobPhase)
_TASK_COUNTS = ("replicas", "pending", "running", "succeeded", "failed")


def _units(p: Problems, field: str, values: Mapping[str, int]) -> None:
    for name, value in values.items():
        if not name:
            p.add(field, "a resource name is required")
        elif not 0 <= value <= MAX_UNITS:
            p.add(f"{field}[{name}]", f"must be between 0 and {MAX_UNITS}")


def _counts(p: Problems, field: str, values: Iterable[tuple[str, int]]) -> None:
    for name, value in values:
        if not 0 <= value <= INT32_MAX:
            p.add(f"{field}.{name}", f"must be between 0 and {INT32_MAX}")


def _raise(p: Problems) -> None:
    if p:
        raise InvalidArgument(bounded_list([f"{f}: {m}" for f, m in p.items]))


def check_register(reg: agent_pb2.Register) -> None:
    p = Problems()
    check_name(p, "register.cluster", reg.cluster, label=False)
    if len(reg.nodes) > MAX_NODES:
        p.add("register.nodes", f"{len(reg.nodes)} nodes, more than {MAX_NODES}")
    names: set[str] = set()
    for i, node in enumerate(reg.nodes):
        where = f"register.nodes[{i}]"
        if not node.name:
            p.add(f"{where}.name", "required")
        elif node.name in names:
            p.add(f"{where}.name", f'node "{node.name}" is listed twice')
        names.add(node.name)
        _units(p, f"{where}.allocatable", node.allocatable.values)
        _units(p, f"{where}.free", node.free.values)
        for j, gpu in enumerate(node.gpus):
            if gpu.index < 0 or gpu.memory_mib < 0 or gpu.memory_mib > MAX_UNITS:
                p.add(f"{where}.gpus[{j}]", "index and memory_mib must be between 0 and 2^50")
    for i, run in enumerate(reg.jobs):
        _run(p, f"register.jobs[{i}]", run.job_uid, run.generation)
    _pools(p, reg.pools, room=MAX_NODES - len(reg.nodes))
    _raise(p)


def _pools(p: Problems, pools: Iterable[agent_pb2.NodePool], *, room: int) -> None:
    """Node pools: named once each, 0 <= current <= max, and no more nodes to add in all than a
    cluster may have (admission counts each as a node)."""
    names: set[str] = set()
    for i, pool in enumerate(pools):
        where = f"register.pools[{i}]"
        if not pool.name:
            p.add(f"{where}.name", "required")
        elif pool.name in names:
            p.add(f"{where}.name", f'node pool "{pool.name}" is listed twice')
        names.add(pool.name)
        _units(p, f"{where}.allocatable", pool.allocatable.values)
        if not 0 <= pool.current <= pool.max:
            p.add(f"{where}.max", f"must be >= current ({pool.current}) and current >= 0")
        if not (math.isfinite(pool.provision_seconds) and pool.provision_seconds >= 0):
            p.add(f"{where}.provision_seconds", "must be a number >= 0")
        room -= max(pool.max - pool.current, 0)
    if room < 0:
        p.add("register.pools", f"nodes and nodes the pools can add are more than {MAX_NODES}")


def _run(p: Problems, field: str, job_uid: str, generation: int) -> None:
    if not job_uid:
        p.add(f"{field}.job_uid", "required")
    if generation < 0:
        p.add(f"{field}.generation", "must be >= 0")


def check_message(msg: agent_pb2.AgentMessage) -> str:
    """The message's kind once it is known to be sound (a batch: every message in it); raises
    InvalidArgument otherwise, naming the field (``batch.messages[2].status.phase``)."""
    p = Problems()
    body = _check(p, msg)
    if body == "batch":
        for i, inner in enumerate(msg.batch.messages):
            q = Problems()
            kind = inner.WhichOneof("body")
            if kind in ("register", "batch"):
                q.add("body", f"a {kind} cannot be sent in a batch")
            else:
                _check(q, inner)
            p.items += [(f"batch.messages[{i}].{f}", m) for f, m in q.items]
    _raise(p)
    return str(body)


def _check(p: Problems, msg: agent_pb2.AgentMessage) -> str | None:
    body = msg.WhichOneof("body")
    if body is None:
        p.add(
            "body",
            "an empty message (expected register, heartbeat, accepted, rejected, status, log_chunk or batch)",
        )
    elif body == "register":
        check_register(msg.register)
    elif body == "heartbeat":
        for i, node in enumerate(msg.heartbeat.nodes):
            if not node.name:
                p.add(f"heartbeat.nodes[{i}].name", "required")
            _units(p, f"heartbeat.nodes[{i}].free", node.free.values)
    elif body in ("accepted", "rejected"):
        ack = getattr(msg, body)
        _run(p, body, ack.job_uid, ack.generation)
    elif body == "status":
        _status(p, msg.status)
    elif body == "log_chunk" and not msg.log_chunk.request_id:
        p.add("log_chunk.request_id", "required")
    return body


def _status(p: Problems, st: agent_pb2.JobStatus) -> None:
    _run(p, "status", st.job_uid, st.generation)
    if st.phase not in JOB_PHASES:
        p.add("status.phase", f'unknown job phase "{st.phase}"')
    if st.retry_count < 0:
        p.add("status.retry_count", "must be >= 0")
    for i, t in enumerate(st.tasks):
        counts = (t.replicas, t.pending, t.running, t.succeeded, t.failed)
        if min(counts) < 0 or max(counts) > INT32_MAX:  # named only when wrong: this runs per report
            _counts(p, f"status.tasks[{i}]", zip(_TASK_COUNTS, counts, strict=True))
    if not (math.isfinite(st.checkpointed_at) and 0 <= st.checkpointed_at <= MAX_EVENT_TIME):
        p.add("status.checkpointed_at", "must be epoch seconds between 1970 and 2200")
    for i, e in enumerate(st.events):
        if not e.reason:
            p.add(f"status.events[{i}].reason", "required")
        if not (math.isfinite(e.time) and 0 <= e.time <= MAX_EVENT_TIME):
            p.add(f"status.events[{i}].time", "must be epoch seconds between 1970 and 2200")
