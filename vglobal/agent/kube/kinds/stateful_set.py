"""StatefulSet: one ``main`` template; Running once its replicas are ready."""

from __future__ import annotations

from vglobal.agent.kube.kinds.base import Workload
from vglobal.model.kinds import stateful_set

ADAPTER = Workload(stateful_set.KIND, "nothing (apps/v1)", builtin=True)
