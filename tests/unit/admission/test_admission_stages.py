"""The placement stages (fit/stages.py), each on its own through admit(): taints and tolerations,
data locality required and preferred, cost, the preference wait, a job's own binpack/spread, away
runs marked and taken first among equal victims, the verdicts describe shows; the placement file
and the annotations checked, naming the field."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.admission.builders import admitted, cluster, gpus, job, reason, res
from vglobal.admission import AdmissionPolicy, Admit, QueueSnap, RunningJob, Snapshot, admit
from vglobal.admission.fit.stages import Stages, with_away
from vglobal.config import HubSettings
from vglobal.model.errors import Problems
from vglobal.model.placement_config import parse_placement_config
from vglobal.model.placement_prefs import PlacementPrefs, parse_tolerations, read_prefs

Q = (QueueSnap("q"),)


def policy(doc: object, **kw: object) -> AdmissionPolicy:
    return AdmissionPolicy(placement_config=parse_placement_config(doc), **kw)  # type: ignore[arg-type]


def prefs(**annotations: str) -> PlacementPrefs:
    p = Problems()
    got = read_prefs(p, {f"vglobal.io/{k.replace('_', '-')}": v for k, v in annotations.items()})
    assert not p.items
    return got


def decide(clusters: tuple, jobs: tuple, pol: AdmissionPolicy, now: float = 0.0, running: tuple = ()) -> dict:
    return admitted(admit(Snapshot(now, Q, clusters, jobs, running, policy=pol)))


# --- filters ------------------------------------------------------------------------------------
def test_a_no_schedule_taint_keeps_out_jobs_without_a_toleration() -> None:
    clusters = (cluster("a-gpu", 1, gpus(8)), cluster("b", 1, gpus(8)))
    pol = policy({"taints": {"a-gpu": ["gpu-only=true:NoSchedule"]}})
    got = decide(clusters, (job("x", "q", gpus(8)),), pol)
    assert got == {"x": "b"}  # binpack alone picks a-gpu (name order)
    tolerated = job("y", "q", gpus(8), prefs=prefs(tolerations="gpu-only"))
    assert decide(clusters, (tolerated,), pol) == {"y": "a-gpu"}
    # a cluster label names taints too; with nowhere else, the job waits saying why
    labelled = (cluster("a-gpu", 1, gpus(8), {"vglobal.io/taints": "gpu-only=true:NoSchedule"}),)
    result = admit(Snapshot(0, Q, labelled, (job("z", "q", gpus(8)),)))
    assert "a-gpu filtered: taint gpu-only=true:NoSchedule (no toleration)" in reason(result, "z")


def test_a_prefer_no_schedule_taint_takes_jobs_only_when_the_untainted_are_full() -> None:
    clusters = (cluster("a", 1, gpus(8)), cluster("b", 1, gpus(8)))
    pol = policy({"taints": {"a": ["burst:PreferNoSchedule"]}})
    got = decide(clusters, (job("x", "q", gpus(8)), job("y", "q", gpus(8), created=1)), pol)
    assert got == {"x": "b", "y": "a"}
    result = admit(Snapshot(0, Q, clusters, (job("y", "q", gpus(8)),), policy=pol))
    assert result.decisions["y"] == Admit("b", placed="b: score 1.00, tried 1st")
    spilled = admit(Snapshot(0, Q, (clusters[0],), (job("y", "q", gpus(8)),), policy=pol))
    assert spilled.decisions["y"] == Admit(
        "a",
        away="cluster a is tainted burst:PreferNoSchedule",
        placed="a: score 0.00, tried 1st (taint burst:PreferNoSchedule (tried last))",
    )


def test_data_locality_required_filters_and_preferred_orders() -> None:
    b = cluster("b", 1, gpus(8), {"vglobal.io/dataset.imagenet": "true"})
    b = replace(b, nodes=(replace(b.nodes[0], free=gpus(4)),))  # half used
    clusters = (cluster("a", 1, gpus(8)), b)
    pol = policy({"datasets": {"coco": ["a"]}})
    soft = job("soft", "q", gpus(4), prefs=prefs(datasets="imagenet"))
    assert decide(clusters, (soft,), pol) == {"soft": "b"}  # binpack alone picks a
    hard = job("hard", "q", gpus(8), prefs=prefs(datasets="imagenet", data_locality="required"))
    result = admit(Snapshot(0, Q, clusters, (hard,), policy=pol))
    assert "a filtered: data locality required: does not hold dataset imagenet" in reason(result, "hard")
    assert decide(clusters, (replace(hard, prefs=prefs(datasets="imagenet")),), pol) == {"hard": "a"}
    assert decide(clusters, (job("c", "q", gpus(4), prefs=prefs(datasets="coco")),), pol) == {"c": "a"}


def test_preference_wait_holds_spillover_until_the_job_has_waited_that_long() -> None:
    clusters = (cluster("a", 1, gpus(8)), cluster("b", 1, gpus(8)))
    busy = RunningJob("r", "q", "a", 0, 0.0, gpus(8), {"a-n00": gpus(8)})
    clusters = (replace(clusters[0], nodes=(replace(clusters[0].nodes[0], free=gpus(0)),)), clusters[1])
    waiting = job("w", "q", gpus(8), waiting_since=0.0, preferred_clusters=("a",), prefs=prefs(preference_wait="10m"))
    early = admit(Snapshot(300.0, Q, clusters, (waiting,), (busy,)))
    assert "not preferred: the job waits up to 10m for a first" in reason(early, "w")
    late = admit(Snapshot(600.0, Q, clusters, (waiting,), (busy,)))
    assert late.decisions["w"] == Admit(
        "b", away="not its first preferred cluster (a)", placed="b: score 0.50, tried 2nd (not preferred)"
    )


def test_a_job_or_queue_may_spread_where_the_hub_binpacks() -> None:
    clusters = (cluster("a", 1, gpus(8)), cluster("b", 1, gpus(8)))
    two = (job("x", "q", gpus(2)), job("y", "q", gpus(2), created=1))
    assert decide(clusters, two, AdmissionPolicy()) == {"x": "a", "y": "a"}
    spread = tuple(replace(j, prefs=prefs(placement="spread")) for j in two)
    assert decide(clusters, spread, AdmissionPolicy()) == {"x": "a", "y": "b"}


# --- scores -------------------------------------------------------------------------------------
def test_cost_orders_clusters_the_cheapest_gang_first() -> None:
    clusters = (cluster("a", 1, res(cpu=32, gpu=8)), cluster("b", 1, res(cpu=32, gpu=8)), cluster("c", 1, res(cpu=32, gpu=8)))
    pol = policy({"costs": {"a": {"nvidia.com/gpu": 3.0}, "b": {"nvidia.com/gpu": 1.0, "cpu": 0.5}}})
    x = job("x", "q", res(cpu=1, gpu=4))
    assert decide(clusters, (x,), pol) == {"x": "c"}  # no cost given: nothing to pay
    assert decide(clusters[:2], (x,), pol) == {"x": "b"}  # 4.5/h against 12/h
    # the admission keeps the chosen cluster's verdict (its Placed event: why it landed there)
    got = admit(Snapshot(0, Q, clusters[:2], (x,), policy=pol)).decisions["x"]
    assert got == Admit("b", placed="b: score 1.00, tried 1st (cost 4.50/h)")
    assert admit(Snapshot(0, Q, clusters[:2], (x,))).decisions["x"] == Admit("a")  # nothing weighed


def test_each_admitted_job_keeps_its_own_verdict_though_alike_jobs_share_one() -> None:
    """A cycle weighs each kind of job once (by what the stages read of it): one of another size,
    preference or toleration still gets the order and verdict of its own."""
    clusters = (cluster("a", 2, res(cpu=32, gpu=8)), cluster("b", 2, res(cpu=32, gpu=8)))
    pol = policy({"costs": {"a": {"nvidia.com/gpu": 1.0}, "b": {"cpu": 0.5}},
                  "taints": {"b": ["spot=true:PreferNoSchedule"]}})  # fmt: skip
    jobs = (
        job("small", "q", res(cpu=1, gpu=1), created=0),
        job("alike", "q", res(cpu=1, gpu=1), created=1),
        job("big", "q", res(cpu=30, gpu=1), created=2),
        job("cpu", "q", res(cpu=2), created=3),
        job("tolerant", "q", res(cpu=1, gpu=1), created=4, prefs=prefs(tolerations="spot=true:PreferNoSchedule")),
    )
    got = admit(Snapshot(0, Q, clusters, jobs, policy=pol)).decisions
    alone = {j.uid: admit(Snapshot(0, Q, clusters, (j,), policy=pol)).decisions[j.uid] for j in jobs}
    assert got == alone
    # b is cheaper for one cpu, dearer for thirty; its taint puts it last for those that mind
    assert got["small"] == got["alike"] == Admit("a", placed="a: score 0.75, tried 1st (cost 1.00/h)")
    assert got["big"] == Admit("a", placed="a: score 1.00, tried 1st (cost 1.00/h)")
    assert got["tolerant"] == Admit("b", placed="b: score 1.00, tried 1st (cost 0.50/h)")


def test_the_default_rule_keeps_cpu_work_off_accelerator_clusters_through_the_stage() -> None:
    """--keep-accelerators is the taint stage's vglobal.io/accelerators:PreferNoSchedule."""
    clusters = (cluster("a-gpu", 1, res(cpu=32, gpu=8)), cluster("b-cpu", 1, res(cpu=8)))
    pol = policy({"costs": {"a-gpu": {"cpu": 0.0}}})  # the staged path
    cpu = (job("c1", "q", res(cpu=8)), job("c2", "q", res(cpu=8), created=1))
    assert decide(clusters, cpu, pol) == {"c1": "b-cpu", "c2": "a-gpu"}
    assert decide(clusters, cpu, policy({}, keep_accelerators=False)) == {"c1": "a-gpu", "c2": "a-gpu"}
    # a job (or queue) tolerating the rule's taint is placed as if it were off, on either path
    tolerant = job("t", "q", res(cpu=8), prefs=prefs(tolerations="vglobal.io/accelerators"))
    assert decide(clusters, (tolerant,), policy({})) == {"t": "a-gpu"}  # binpack: name order
    assert decide(clusters, (tolerant,), pol) == {"t": "a-gpu"}
    assert decide(clusters, (replace(tolerant, prefs=prefs()),), policy({})) == {"t": "b-cpu"}
    assert Stages(clusters, parse_placement_config({}), True, 0.0).verdict_lines(tolerant, {}) == [
        "a-gpu: score 1.00, tried 1st",
        "b-cpu: score 1.00, tried 1st",  # equal scores: tried together, binpack chooses
    ]


# --- away runs ----------------------------------------------------------------------------------
def test_away_runs_are_marked_and_preempted_before_their_newer_equals() -> None:
    node = {"a-n00": gpus(4)}
    away = RunningJob("away", "q", "a", 0, 0.0, gpus(4), node, preferred=("b",))
    home = RunningJob("home", "q", "a", 0, 5.0, gpus(4), {"a-n00": gpus(4)}, preferred=("a",))
    full = cluster("a", 1, gpus(8))
    full = replace(full, nodes=(replace(full.nodes[0], free=gpus(0)),))
    snap = Snapshot(10.0, Q, (full,), (job("hi", "q", gpus(4), priority=5),), (away, home))
    assert [j.away for j in with_away(snap).running] == [True, False]
    result = admit(snap)
    assert [r.victim_uid for r in result.reclaims] == ["away"]  # not the newest, home
    # without the mark, the newest goes
    plain = replace(snap, running=(replace(away, preferred=()), home))
    assert [r.victim_uid for r in admit(plain).reclaims] == ["home"]


# --- describe -----------------------------------------------------------------------------------
def test_verdicts_say_each_clusters_filter_and_score() -> None:
    clusters = (
        cluster("cloud", 1, res(cpu=32, gpu=8)),
        cluster("gpu-east", 1, res(cpu=32, gpu=8)),
        cluster("on-prem", 1, res(cpu=32, gpu=8)),
    )
    config = parse_placement_config(
        {"taints": {"gpu-east": ["gpu-only=true:NoSchedule"]}, "costs": {"cloud": {"nvidia.com/gpu": 1.5}}}
    )
    stages = Stages(clusters, config, True, 0.0)
    x = job("x", "q", res(cpu=1, gpu=8), preferred_clusters=("on-prem", "cloud"))
    assert stages.verdict_lines(x, {}) == [
        "on-prem: score 1.00, tried 1st (preference 1st)",
        "cloud: score 0.50, tried 2nd (cost 12.00/h, preference 2nd)",
        "gpu-east: filtered: taint gpu-only=true:NoSchedule (no toleration)",
    ]


# --- input checks -------------------------------------------------------------------------------
def test_the_placement_file_and_the_annotations_are_checked_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"taints\.a: \"x\" is not a taint"):
        parse_placement_config({"taints": {"a": ["x"]}})
    with pytest.raises(ValueError, match=r"costs\.a\.cpu: -1 is not a cost"):
        parse_placement_config({"costs": {"a": {"cpu": -1}}})
    with pytest.raises(ValueError, match="cost: unknown field"):
        parse_placement_config({"cost": {}})
    p = Problems()
    read_prefs(p, {"vglobal.io/data-locality": "must", "vglobal.io/preference-wait": "soon"})
    assert [f for f, _ in p.items] == [
        "metadata.annotations[vglobal.io/data-locality]",
        "metadata.annotations[vglobal.io/preference-wait]",
    ]
    (t,) = parse_tolerations(Problems(), "", "gpu-only=true:NoSchedule")
    assert PlacementPrefs(tolerations=(t,)) == PlacementPrefs.from_json(PlacementPrefs(tolerations=(t,)).to_json())


def test_the_hub_refuses_a_bad_placement_file_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "placement.yaml"
    bad.write_text("taints: {cloud: [burst]}\n")
    with pytest.raises(ValueError, match=r"--placement-config .*taints\.cloud: \"burst\" is not a taint"):
        HubSettings(placement_config=bad)
