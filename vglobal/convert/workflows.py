"""CronJobs, JobTemplates and JobFlows as the API shows them."""

from __future__ import annotations

import json
from datetime import datetime

from vglobal.api.v1 import cronjobs_pb2, jobflows_pb2
from vglobal.convert.times import set_time
from vglobal.model.cronjob import CronJob
from vglobal.model.jobflow import JobFlow, JobTemplate
from vglobal.model.records import CronJobRow, JobFlowRow, JobTemplateRow
from vglobal.model.workflow_status import CronStatus, JobFlowStatus


def cron_job(
    row: CronJobRow, cron: CronJob, status: CronStatus, next_time: datetime | None
) -> cronjobs_pb2.CronJob:
    msg = cronjobs_pb2.CronJob(
        uid=row.uid,
        name=row.name,
        namespace=row.namespace,
        schedule=cron.schedule.text,
        time_zone=cron.time_zone or "",
        suspend=cron.suspend,
        concurrency_policy=cron.concurrency_policy.value,
        successful_jobs_history_limit=cron.successful_jobs_history_limit,
        failed_jobs_history_limit=cron.failed_jobs_history_limit,
        queue=str(cron.job_spec.get("queue") or "default"),
        active=list(status.active),
        manifest=json.dumps(row.manifest, sort_keys=True),
    )
    if cron.starting_deadline_seconds is not None:
        msg.starting_deadline_seconds = cron.starting_deadline_seconds
    set_time(msg.last_schedule_time, status.last_schedule_time)
    set_time(msg.last_successful_time, status.last_successful_time)
    set_time(msg.next_schedule_time, next_time)
    set_time(msg.created_at, row.created_at)
    return msg


def job_template(row: JobTemplateRow, template: JobTemplate) -> jobflows_pb2.JobTemplate:
    msg = jobflows_pb2.JobTemplate(
        name=row.name,
        namespace=row.namespace,
        queue=str(template.job_spec.get("queue") or "default"),
        tasks=list(template.task_names),
        manifest=json.dumps(row.manifest, sort_keys=True),
    )
    set_time(msg.created_at, row.created_at)
    return msg


def job_flow(row: JobFlowRow, flow: JobFlow, status: JobFlowStatus | None) -> jobflows_pb2.JobFlow:
    """A JobFlow as its last look left it (before the first look: every step Waiting)."""
    seen = {f.name: f for f in status.flows} if status is not None else {}
    msg = jobflows_pb2.JobFlow(
        uid=row.uid,
        name=row.name,
        namespace=row.namespace,
        phase=row.phase,
        job_retain_policy=flow.job_retain_policy.value,
        manifest=json.dumps(row.manifest, sort_keys=True),
    )
    for f in flow.flows:
        st = seen.get(f.name)
        step = jobflows_pb2.FlowStep(
            name=f.name,
            job=flow.job_name(f.name),
            phase=st.phase if st is not None else "Waiting",
            depends_on=list(f.depends_on),
        )
        if st is not None:
            set_time(step.created_at, st.created)
            set_time(step.finished_at, st.finished)
        msg.steps.append(step)
    set_time(msg.created_at, row.created_at)
    return msg


