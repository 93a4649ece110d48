"""The SDK's CronJob, JobTemplate and JobFlow calls (the hub's loops make their Jobs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from vglobal.api.v1 import cronjobs_pb2, cronjobs_pb2_grpc, jobflows_pb2, jobflows_pb2_grpc, jobs_pb2

T = TypeVar("T")


class WorkflowCalls:
    cronjobs: cronjobs_pb2_grpc.CronJobServiceStub
    jobflows: jobflows_pb2_grpc.JobFlowServiceStub

    def _call(self, fn: Callable[..., T], request: Any, *, idempotent: bool = True) -> T:
        raise NotImplementedError  # the Client's

    # CronJobs
    def apply_cron_job(
        self, manifest: str, *, field_validation: str = ""
    ) -> cronjobs_pb2.ApplyCronJobResponse:
        request = cronjobs_pb2.ApplyCronJobRequest(manifest=manifest, field_validation=field_validation)
        return self._call(self.cronjobs.ApplyCronJob, request)

    def get_cron_job(self, name: str, namespace: str = "default") -> cronjobs_pb2.CronJob:
        return self._call(self.cronjobs.GetCronJob, cronjobs_pb2.CronJobRef(name=name, namespace=namespace))

    def list_cron_jobs(self, namespace: str = "") -> list[cronjobs_pb2.CronJob]:
        req = cronjobs_pb2.ListCronJobsRequest(namespace=namespace)
        return list(self._call(self.cronjobs.ListCronJobs, req).cron_jobs)

    def delete_cron_job(
        self, name: str, namespace: str = "default", *, cascade: bool = False
    ) -> cronjobs_pb2.DeleteCronJobResponse:
        ref = cronjobs_pb2.CronJobRef(name=name, namespace=namespace)
        return self._call(
            self.cronjobs.DeleteCronJob, cronjobs_pb2.DeleteCronJobRequest(ref=ref, cascade=cascade)
        )

    def suspend_cron_job(self, name: str, namespace: str = "default") -> cronjobs_pb2.CronJob:
        return self._call(
            self.cronjobs.SuspendCronJob, cronjobs_pb2.CronJobRef(name=name, namespace=namespace)
        )

    def resume_cron_job(self, name: str, namespace: str = "default") -> cronjobs_pb2.CronJob:
        return self._call(
            self.cronjobs.ResumeCronJob, cronjobs_pb2.CronJobRef(name=name, namespace=namespace)
        )

    def create_job_from_cron_job(
        self, job_name: str, cron_job: str, namespace: str = "default"
    ) -> jobs_pb2.Job:
        """A Job made now from the CronJob's template (``kubectl create job NAME --from=cronjob/CRON``)."""
        req = cronjobs_pb2.CreateJobFromCronJobRequest(
            cron_job=cronjobs_pb2.CronJobRef(name=cron_job, namespace=namespace), job_name=job_name
        )
        return self._call(self.cronjobs.CreateJobFromCronJob, req, idempotent=False)

    # JobTemplates and JobFlows
    def apply_job_template(
        self, manifest: str, *, field_validation: str = ""
    ) -> jobflows_pb2.ApplyJobTemplateResponse:
        request = jobflows_pb2.ApplyFlowObjectRequest(manifest=manifest, field_validation=field_validation)
        return self._call(self.jobflows.ApplyJobTemplate, request)

    def get_job_template(self, name: str, namespace: str = "default") -> jobflows_pb2.JobTemplate:
        return self._call(
            self.jobflows.GetJobTemplate, jobflows_pb2.FlowObjectRef(name=name, namespace=namespace)
        )

    def list_job_templates(self, namespace: str = "") -> list[jobflows_pb2.JobTemplate]:
        req = jobflows_pb2.ListFlowObjectsRequest(namespace=namespace)
        return list(self._call(self.jobflows.ListJobTemplates, req).job_templates)

    def delete_job_template(
        self, name: str, namespace: str = "default"
    ) -> jobflows_pb2.DeleteFlowObjectResponse:
        ref = jobflows_pb2.FlowObjectRef(name=name, namespace=namespace)
        return self._call(self.jobflows.DeleteJobTemplate, ref)

    def apply_job_flow(
        self, manifest: str, *, field_validation: str = ""
    ) -> jobflows_pb2.ApplyJobFlowResponse:
        request = jobflows_pb2.ApplyFlowObjectRequest(manifest=manifest, field_validation=field_validation)
        return self._call(self.jobflows.ApplyJobFlow, request)

    def get_job_flow(self, name: str, namespace: str = "default") -> jobflows_pb2.JobFlow:
        return self._call(
            self.jobflows.GetJobFlow, jobflows_pb2.FlowObjectRef(name=name, namespace=namespace)
        )

    def list_job_flows(self, namespace: str = "") -> list[jobflows_pb2.JobFlow]:
        req = jobflows_pb2.ListFlowObjectsRequest(namespace=namespace)
        return list(self._call(self.jobflows.ListJobFlows, req).job_flows)

    def delete_job_flow(self, name: str, namespace: str = "default") -> jobflows_pb2.DeleteFlowObjectResponse:
        ref = jobflows_pb2.FlowObjectRef(name=name, namespace=namespace)
        return self._call(self.jobflows.DeleteJobFlow, ref)
