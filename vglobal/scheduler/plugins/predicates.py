"""predicates: pod count, unschedulable, node selector / required affinity, host ports, taints,
required inter-pod affinity and anti-affinity (``vglobal.scheduler.pod_affinity``).

The checks that depend only on the pod spec and node labels are computed once per (job, role)
over all nodes and cached for the session; pod count and host ports change as tasks land.
"""

from __future__ import annotations

import numpy as np

from vglobal.scheduler import k8s, pod_affinity
from vglobal.scheduler.framework import NodeFilter, Plugin
from vglobal.scheduler.info import TaskInfo
from vglobal.scheduler.nodes import BoolArray
from vglobal.scheduler.session import Session

POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
PORTS_IN_USE = "node(s) didn't have free ports for the requested pod ports"
UNTOLERATED_TAINT = "node(s) had untolerated taint"
_HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


class PredicatesPlugin(Plugin[Session]):
    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        self.pod_number = self.arg_bool("predicate.PodNumberEnable", True)
        self.unschedulable = self.arg_bool("predicate.NodeUnschedulableEnable", True)
        self.affinity = self.arg_bool("predicate.NodeAffinityEnable", True)
        self.ports = self.arg_bool("predicate.NodePortsEnable", True)
        self.taints = self.arg_bool("predicate.TaintTolerationEnable", True)
        # Pod affinity needs a walk over the placed pods per check: only when some pod has a term.
        self.pod_affinity = self.arg_bool("predicate.PodAffinityEnable", True) and any(
            t.spec.affinity and pod_affinity.has_pod_affinity(t.spec.affinity)
            for job in ssn.jobs.values()
            for t in job.tasks.values()
        )
        self._static: dict[tuple[str, str], list[NodeFilter]] = {}
        nodes = ssn.nodes
        pods = ssn.index.col["pods"]

        def predicate(task: TaskInfo) -> list[NodeFilter]:
            out: list[NodeFilter] = []
            if self.pod_number:
                count = nodes.used[:, pods] + nodes.pipelined[:, pods]
                out.append(NodeFilter(POD_NUMBER_EXCEEDED, count < nodes.alloc[:, pods], unresolvable=False))
            out.extend(self._static_filters(ssn, task))
            if self.ports and task.host_ports:
                wanted = set(task.host_ports)
                free = np.fromiter(
                    (not wanted.intersection(used) for used in nodes.used_ports),
                    dtype=np.bool_,
                    count=len(nodes),
                )
                out.append(NodeFilter(PORTS_IN_USE, free, unresolvable=False))
            if self.pod_affinity:
                out.extend(pod_affinity.filters(nodes, ssn.node_tasks, task))
            return out

        ssn.add_predicate_fn(self.name, predicate)

    def _static_filters(self, ssn: Session, task: TaskInfo) -> list[NodeFilter]:
        key = (task.job.uid, task.role)
        cached = self._static.get(key)
        if cached is not None:
            return cached
        nodes = ssn.nodes
        spec = task.spec
        out: list[NodeFilter] = []
        if self.unschedulable and nodes.unschedulable.any():
            tolerated = any(k8s.tolerates(t, k8s.UNSCHEDULABLE_TAINT) for t in spec.tolerations)
            if not tolerated:
                out.append(NodeFilter(UNSCHEDULABLE, ~nodes.unschedulable))
        if self.affinity and (spec.node_selector or k8s.required_affinity_terms(spec.affinity) is not None):
            ok: BoolArray = np.fromiter(
                (
                    k8s.match_node_selector_and_affinity(spec.node_selector, spec.affinity, labels, name)
                    for labels, name in zip(nodes.labels, nodes.names, strict=True)
                ),
                dtype=np.bool_,
                count=len(nodes),
            )
            out.append(NodeFilter(AFFINITY_MISMATCH, ok))
        if self.taints and any(nodes.taints):
            ok = np.fromiter(
                (k8s.untolerated(taints, spec.tolerations, _HARD_EFFECTS) == 0 for taints in nodes.taints),
                dtype=np.bool_,
                count=len(nodes),
            )
            out.append(NodeFilter(UNTOLERATED_TAINT, ok))
        self._static[key] = out
        return out
