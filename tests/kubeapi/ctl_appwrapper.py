"""AppWrapper's controller (``workload.codeflare.dev/v1beta2``), reduced to what makes pods and the
status it writes: each component's ``template`` is created as the object it is (a batch/v1 Job,
say), named as its template names it, owned by the AppWrapper; the wrapped objects' controllers
make the pods. ``status.phase`` is ``Running`` once every component exists, ``Succeeded`` once
every wrapped Job completed, ``Failed`` once one failed. No admission by Kueue, no retries."""

from __future__ import annotations

import copy

from tests.kubeapi.ctl_training import _job_state
from tests.kubeapi.store import Obj
from tests.kubeapi.workload_ctl import Ctx, owner_ref
from tests.kubeapi.workload_kinds import APPWRAPPERS, BUILTIN_WORKLOADS, CUSTOM_WORKLOADS, JOBS

_BY_TYPE = {(k.api_version, k.kind): k for k in (*BUILTIN_WORKLOADS, *CUSTOM_WORKLOADS)}


def appwrapper(ctx: Ctx, aw: Obj) -> None:
    meta, spec = aw["metadata"], aw.get("spec") or {}
    if (aw.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return
    made: list[Obj] = []
    for i, component in enumerate(spec.get("components") or []):
        template = copy.deepcopy(component.get("template") or {})
        kind = _BY_TYPE.get((template.get("apiVersion", ""), template.get("kind", "")))
        if kind is None:
            continue
        name = (template.get("metadata") or {}).get("name") or f"{meta['name']}-{i}"
        have = next((o for o in ctx.children(kind, aw) if o["metadata"]["name"] == name), None)
        if have is None:
            body = {
                "metadata": {
                    **(template.get("metadata") or {}),
                    "name": name,
                    "ownerReferences": [owner_ref(APPWRAPPERS, aw)],
                },
                "spec": template.get("spec") or {},
            }
            have = ctx.create(kind, meta["namespace"], body)
        if have is not None:
            made.append(have)
    states = [_job_state(o) for o in made if o.get("kind") == JOBS.kind]
    phase = "Resuming"
    if "Failed" in states:
        phase = "Failed"
    elif states and all(s == "Complete" for s in states):
        phase = "Succeeded"
    elif made and len(made) == len(spec.get("components") or []):
        phase = "Running"
    ctx.set_status(APPWRAPPERS, aw, {"phase": phase})


RECONCILERS = {APPWRAPPERS: appwrapper}
