"""The CronJob and JobFlow examples parse, and the diamond's templates fit its flows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from vglobal.model.cronjob import CronJob
from vglobal.model.jobflow import JobFlow, JobTemplate, check_flow_templates
from vglobal.model.manifests import parse_manifests
from vglobal.model.workflow_status import CronStatus
from vglobal.workflows.cron_decision import CreateRun, decide_cron
from vglobal.workflows.flow_progress import flow_progress

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_the_example_cronjob_makes_a_run_every_two_minutes() -> None:
    [cron] = parse_manifests((EXAMPLES / "cronjob.yaml").read_text())
    assert isinstance(cron, CronJob) and cron.schedule.time_zone == "Europe/Berlin"
    created = datetime(2024, 5, 1, 12, 0, 30, tzinfo=UTC)
    d = decide_cron(
        cron, created=created, status=CronStatus(), runs=[], now=datetime(2024, 5, 1, 12, 2, 5, tzinfo=UTC)
    )
    [create] = d.actions
    assert isinstance(create, CreateRun) and create.job.queue == "research"
    assert d.next_time == datetime(2024, 5, 1, 12, 4, tzinfo=UTC)


def test_the_example_diamond_parses_and_its_templates_fit() -> None:
    docs = parse_manifests((EXAMPLES / "jobflow-diamond.yaml").read_text())
    templates = {d.name: d for d in docs if isinstance(d, JobTemplate)}
    [flow] = [d for d in docs if isinstance(d, JobFlow)]
    assert [f.depends_on for f in flow.flows] == [(), ("fetch",), ("fetch",), ("train-cnn", "train-vit")]
    check_flow_templates(flow, templates)
    assert flow_progress(flow, {}).create == ("fetch",)
