"""The field names of a pod template's ``spec`` (core/v1 PodSpec, Kubernetes 1.32), for strict
field validation.

We check the names of PodSpec's own fields, of each container's (containers, initContainers,
ephemeralContainers) and of a container's ``resources``: what decides what a pod requests. What
lies deeper (affinity, volumes, probes, securityContext, env, ...) goes to the cluster as written
and its API server validates it there.
"""

from __future__ import annotations

from vglobal.model.k8s import Model

CONTAINER_FIELDS = frozenset(
    {
        "args",
        "command",
        "env",
        "envFrom",
        "image",
        "imagePullPolicy",
        "lifecycle",
        "livenessProbe",
        "name",
        "ports",
        "readinessProbe",
        "resizePolicy",
        "restartPolicy",
        "securityContext",
        "startupProbe",
        "stdin",
        "stdinOnce",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "tty",
        "volumeDevices",
        "volumeMounts",
        "workingDir",
    }
)

POD_SPEC_FIELDS = frozenset(
    {
        "activeDeadlineSeconds",
        "affinity",
        "automountServiceAccountToken",
        "dnsConfig",
        "dnsPolicy",
        "enableServiceLinks",
        "hostAliases",
        "hostIPC",
        "hostNetwork",
        "hostPID",
        "hostUsers",
        "hostname",
        "imagePullSecrets",
        "nodeName",
        "nodeSelector",
        "os",
        "overhead",
        "preemptionPolicy",
        "priority",
        "priorityClassName",
        "readinessGates",
        "resourceClaims",
        "resources",
        "restartPolicy",
        "runtimeClassName",
        "schedulerName",
        "schedulingGates",
        "securityContext",
        "serviceAccount",
        "serviceAccountName",
        "setHostnameAsFQDN",
        "shareProcessNamespace",
        "subdomain",
        "terminationGracePeriodSeconds",
        "tolerations",
        "topologySpreadConstraints",
        "volumes",
    }
)


class ResourceRequirementsFields(Model):
    passthrough = frozenset({"requests", "limits", "claims"})


class ContainerFields(Model):
    passthrough = CONTAINER_FIELDS
    shapes = {"resources": (ResourceRequirementsFields, False)}


class EphemeralContainerFields(Model):
    passthrough = CONTAINER_FIELDS | {"targetContainerName"}
    shapes = {"resources": (ResourceRequirementsFields, False)}


class PodSpecFields(Model):
    passthrough = POD_SPEC_FIELDS
    shapes = {
        "containers": (ContainerFields, True),
        "initContainers": (ContainerFields, True),
        "ephemeralContainers": (EphemeralContainerFields, True),
    }
