"""GPU devices for the deviceshare plugin: inventory, per-device usage, MIG geometries, fragmentation."""

from vglobal.model.gpu_fit import DeviceRequest
from vglobal.scheduler.devices.inventory import (
    GPUS_EXTENSION,
    GpuDevice,
    device_request,
    gpus_from_spec,
    node_gpus,
    vgpu_capacity,
)

__all__ = [
    "GPUS_EXTENSION",
    "DeviceRequest",
    "GpuDevice",
    "device_request",
    "gpus_from_spec",
    "node_gpus",
    "vgpu_capacity",
]
