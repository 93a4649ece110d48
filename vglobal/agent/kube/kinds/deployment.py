"""Deployment: one ``main`` template; Running once its replicas are ready."""

from __future__ import annotations

from vglobal.agent.kube.kinds.base import Workload
from vglobal.model.kinds import deployment

ADAPTER = Workload(deployment.KIND, "nothing (apps/v1)", builtin=True)
