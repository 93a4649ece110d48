"""Framework: conf parsing, Go heap order, plugin voting, node counts, statement undo."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.scheduler.sched_table import Group, build_state, node, pod, queue
from vglobal.scheduler import (
    ACTIONS,
    DEFAULT_AGENT_CONF,
    PLUGINS,
    PluginOption,
    SchedulerConf,
    TaskStatus,
    node_group_mode,
    parse_conf,
)
from vglobal.scheduler.framework import ABSTAIN, PERMIT, REJECT, JobVoteFn, Plugin, VictimsFn
from vglobal.scheduler.heap import GoHeap
from vglobal.scheduler.info import JobInfo, TaskInfo
from vglobal.scheduler.selection import nodes_to_find
from vglobal.scheduler.session import Session
from vglobal.scheduler.statement import Statement

VOLCANO_CONF = """
actions: "enqueue, allocate, backfill, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 2
configurations:
- name: allocate
  arguments:
    enablePredicateErrorCache: true
"""


def test_parse_volcano_conf() -> None:
    conf = parse_conf(VOLCANO_CONF)
    assert conf.actions == ("enqueue", "allocate", "backfill", "preempt", "reclaim")
    assert [p.name for p in conf.tiers[0]] == ["priority", "gang", "conformance"]
    gang = conf.tiers[0][1]
    assert not gang.enabled("Preemptable")
    assert gang.enabled("JobReady")  # every flag defaults to true
    assert conf.tiers[1][4].arguments == {"binpack.weight": 10, "binpack.cpu": 2}
    assert conf.configurations["allocate"] == {"enablePredicateErrorCache": True}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('actions: "allocate, shuffle"\ntiers: []', "actions[1]: unknown action 'shuffle'"),
        (
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: gangg',
            "tiers[0].plugins[0].name: unknown plugin 'gangg'",
        ),
        (
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJob: maybe',
            "tiers[0].plugins[0].enableJob",
        ),
        ('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    weight: 1', "unknown plugin option"),
        ("actions: [1]", "actions: expected a comma-separated string"),
    ],
)
def test_parse_conf_errors_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_conf(text)


def test_default_agent_conf_uses_built_in_actions_and_plugins() -> None:
    assert set(DEFAULT_AGENT_CONF.plugin_names()) <= set(PLUGINS)
    assert set(DEFAULT_AGENT_CONF.actions) <= set(ACTIONS)
    assert DEFAULT_AGENT_CONF.actions == ("enqueue", "allocate", "backfill")
    assert [p.name for p in DEFAULT_AGENT_CONF.tiers[1]] == [
        "drf",
        "predicates",
        "nodeorder",
        "binpack",
        "network-topology-aware",
        "deviceshare",
        "nodegroup",
    ]
    # queue node-group affinity is honoured, inherited down the tree as at the hub; queues that
    # name no group keep every node outside the groups (strict: false)
    (nodegroup,) = [p for p in DEFAULT_AGENT_CONF.tiers[1] if p.name == "nodegroup"]
    assert nodegroup.flags == {"enableHierarchy": True} and dict(nodegroup.arguments) == {"strict": False}
    assert node_group_mode(DEFAULT_AGENT_CONF) == "lenient"


@given(st.lists(st.integers(-50, 50), max_size=60))
def test_go_heap_pops_in_order_like_a_heap(values: list[int]) -> None:
    heap: GoHeap[int] = GoHeap(lambda a, b: a < b)
    for v in values:
        heap.push(v)
    assert [heap.pop() for _ in values] == sorted(values)


def test_go_heap_is_not_reheapified_when_keys_change() -> None:
    """A key that changes after push keeps its slot; the pop order follows Go's sift steps."""
    key = {"a": 1, "b": 2, "c": 3, "d": 4}
    heap: GoHeap[str] = GoHeap(lambda x, y: key[x] < key[y])
    for item in "abcd":
        heap.push(item)
    key["d"] = 0  # a re-sorted queue would now return d first
    assert [heap.pop() for _ in range(4)] == ["a", "d", "b", "c"]


def test_nodes_to_find_matches_volcano() -> None:
    assert nodes_to_find(100) == 100
    assert nodes_to_find(101) == 100  # 50 - 0 = 50% -> 50, raised to the minimum of 100
    assert nodes_to_find(1000) == 420  # 50 - 8 = 42%
    assert nodes_to_find(5000) == 500  # 50 - 40 = 10%
    assert nodes_to_find(10000) == 500  # 50 - 80 < 5 -> 5%


class _Voter(Plugin[Session]):
    """Registers nothing itself: each test adds the function whose combination it checks."""

    def on_session_open(self, ssn: Session) -> None:
        return None


# the built-in tables and this test's own plugins, given to the session (nothing global changes)
TEST_PLUGINS = {**PLUGINS, **{name: _Voter for name in ("test-a", "test-b", "test-c", "test-x")}}


def test_a_conf_may_name_the_plugins_of_the_tables_it_is_given() -> None:
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: test-a'
    with pytest.raises(ValueError, match="unknown plugin 'test-a'"):
        parse_conf(text)
    assert parse_conf(text, plugins=TEST_PLUGINS).plugin_names() == ("test-a",)
    with pytest.raises(ValueError, match=r"actions\[0\]: unknown action 'allocate'"):
        parse_conf(text, actions={"enqueue": ACTIONS["enqueue"]}, plugins=TEST_PLUGINS)


def _session(conf: SchedulerConf) -> Session:
    state = build_state(
        [node("n1", "4", "8Gi")],
        [Group("c1/pg1", "c1", min_member=1)],
        [pod("c1/p-0", "c1/pg1"), pod("c1/p-1", "c1/pg1", status=TaskStatus.Running, node="n1")],
        [queue("c1")],
    )
    ssn = Session(state, conf, actions=ACTIONS, plugins=TEST_PLUGINS)
    return ssn


def _answer(answer: tuple[list[TaskInfo], int]) -> VictimsFn:
    return lambda _p, _c: answer


def _vote(vote: int) -> JobVoteFn:
    return lambda _j: vote


def _explode(_a: JobInfo, _b: JobInfo) -> int:
    raise AssertionError("a disabled plugin was called")


def _victim_conf(*tiers: list[str]) -> SchedulerConf:
    return SchedulerConf(("allocate",), tuple(tuple(PluginOption("test-" + n) for n in t) for t in tiers))


def test_victim_voting_intersects_within_a_tier_and_falls_through_empty_tiers() -> None:
    ssn = _session(_victim_conf(["a", "b"], ["c"]))
    job = ssn.jobs["c1/pg1"]
    tasks = sorted(job.tasks.values(), key=lambda t: t.uid)
    t0, t1 = tasks
    answers = {"a": ([t0, t1], PERMIT), "b": ([t1], PERMIT), "c": ([t0], PERMIT)}
    for name, answer in answers.items():
        ssn.add_preemptable_fn("test-" + name, _answer(answer))
    ssn.compile_hooks()
    assert ssn.preemptable(t0, tasks) == [t1]  # tier 1 intersection decides

    ssn = _session(_victim_conf(["a", "b"], ["c"]))
    answers = {"a": ([t0], PERMIT), "b": ([], PERMIT), "c": ([t1], PERMIT)}
    for name, answer in answers.items():
        ssn.add_preemptable_fn("test-" + name, _answer(answer))
    ssn.compile_hooks()
    assert ssn.preemptable(t0, tasks) == [t1]  # an empty answer clears tier 1; tier 2 still runs

    ssn = _session(_victim_conf(["a", "b"]))
    answers = {"a": ([t0], ABSTAIN), "b": ([t1], PERMIT)}
    for name, answer in answers.items():
        ssn.add_preemptable_fn("test-" + name, _answer(answer))
    ssn.compile_hooks()
    assert ssn.preemptable(t0, tasks) == [t1]  # abstaining plugins are skipped


def test_enqueueable_votes_per_tier() -> None:
    ssn = _session(_victim_conf(["a", "b"], ["c"]))
    job = ssn.jobs["c1/pg1"]
    votes = {"a": ABSTAIN, "b": PERMIT, "c": REJECT}
    for name, vote in votes.items():
        ssn.add_job_enqueueable_fn("test-" + name, _vote(vote))
    ssn.compile_hooks()
    assert ssn.job_enqueueable(job)  # tier 1 permits before tier 2's reject is asked
    ssn = _session(_victim_conf(["a"], ["c"]))
    for name, vote in {"a": ABSTAIN, "c": REJECT}.items():
        ssn.add_job_enqueueable_fn("test-" + name, _vote(vote))
    ssn.compile_hooks()
    assert not ssn.job_enqueueable(job)


def test_disabled_flag_removes_a_plugin_from_one_extension_point() -> None:
    conf = SchedulerConf(("allocate",), ((PluginOption("test-x", flags={"enableJobOrder": False}),),))
    ssn = _session(conf)
    ssn.add_job_order_fn("test-x", _explode)
    ssn.compile_hooks()
    jobs = list(ssn.jobs.values())
    assert not ssn.job_order(jobs[0], jobs[0])


def test_statement_discard_restores_node_arrays_and_statuses() -> None:
    ssn = _session(DEFAULT_AGENT_CONF)
    ssn.open()
    before = (ssn.nodes.idle.copy(), ssn.nodes.future_idle.copy(), ssn.nodes.releasing.copy())
    job = ssn.jobs["c1/pg1"]
    pending = job.tasks["c1/p-0"]
    running = job.tasks["c1/p-1"]
    stmt = Statement(ssn)
    stmt.evict(running)
    stmt.pipeline(pending, 0)
    assert (running.status, pending.status) == (TaskStatus.Releasing, TaskStatus.Pipelined)
    stmt.discard()
    assert running.status == TaskStatus.Running and pending.status == TaskStatus.Pending
    for a, b in zip(before, (ssn.nodes.idle, ssn.nodes.future_idle, ssn.nodes.releasing), strict=True):
        assert np.array_equal(a, b)
    stmt.allocate(pending, 0)
    stmt.commit()
    assert ssn.binds == {"c1/p-0": "n1"}


def test_statement_saved_operations_replay_after_discard() -> None:
    """A dry run (topology search) is saved, discarded, then replayed onto the session."""
    ssn = _session(DEFAULT_AGENT_CONF)
    ssn.open()
    pending = ssn.jobs["c1/pg1"].tasks["c1/p-0"]
    dry = Statement(ssn)
    dry.allocate(pending, 0)
    saved = dry.save_operations()
    dry.discard()
    assert pending.status == TaskStatus.Pending
    final = Statement(ssn)
    final.recover_operations(saved)
    final.commit()
    assert ssn.binds == {"c1/p-0": "n1"}


def test_predicate_candidates_restrict_the_nodes() -> None:
    from vglobal.scheduler.selection import predicate_nodes

    state = build_state(
        [node("n1"), node("n2"), node("n3", "1", "1Gi")],
        [Group("c1/pg1", "c1")],
        [pod("c1/p-0", "c1/pg1", "2")],
        [queue("c1")],
    )
    ssn = Session(state, DEFAULT_AGENT_CONF, actions=ACTIONS, plugins=PLUGINS)
    ssn.open()
    task = ssn.jobs["c1/pg1"].tasks["c1/p-0"]
    assert predicate_nodes(ssn, task).rows.tolist() == [0, 1]
    assert predicate_nodes(ssn, task, candidates=np.array([1, 2])).rows.tolist() == [1]
    none = predicate_nodes(ssn, task, candidates=np.array([2]))
    assert none.fit_error == "0/1 nodes are available: 1 Insufficient cpu."
