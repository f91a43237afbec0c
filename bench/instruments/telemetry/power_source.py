"""What NVML's power reading (``nvmlDeviceGetPowerUsage``) is on a given GPU: instantaneous or a 1-s average."""

from __future__ import annotations

import re

#: GPUs built on GA100 (A100, A800, A30), by NVML name: their ``nvmlDeviceGetPowerUsage`` is instantaneous.
GA100_NAME = re.compile(r"\bA(100|800|30)X?\b")
#: NVML's architecture number of Ampere (``NVML_DEVICE_ARCH_AMPERE``, nvidia-ml-py 13.615.71).
ARCH_AMPERE = 7


def averaged_power_kind(name: str, arch: int | None) -> str | None:
    """What ``nvmlDeviceGetPowerUsage`` returns on the GPU named ``name`` of NVML architecture ``arch``:
    "1-s average" or "instantaneous"; None when ``arch`` is unknown and the name is not a GA100 one.

    nvml.h (nvidia-nvml-dev 13.5.37, ``nvmlDeviceGetPowerUsage``): "On Ampere (except GA100) or newer GPUs, the
    API returns power averaged over 1 sec interval. On GA100 and older architectures, instantaneous power is
    returned." Ampere's GA100 and GA10x share one architecture number, so GA100 is told by name.
    """
    if GA100_NAME.search(name):
        return "instantaneous"
    if arch is None:
        return None
    return "1-s average" if arch >= ARCH_AMPERE else "instantaneous"


def averaged_power_note(name: str, arch: int | None) -> str:
    """The telemetry note of a window whose power came from ``nvmlDeviceGetPowerUsage`` (``averaged_power_kind``)."""
    kind = averaged_power_kind(name, arch)
    head = ("power is NVML's nvmlDeviceGetPowerUsage reading (NVML_FI_DEV_POWER_INSTANT not offered, or without a "
            "value in the cell's first reads)")
    if kind == "instantaneous":
        return f"{head}: instantaneous on {name} (GA100 and pre-Ampere GPUs)"
    if kind == "1-s average":
        return f"{head}: a 1-s average on {name} (Ampere except GA100, and newer), so it lags and smooths the load"
    return (f"{head}: a 1-s average on Ampere-and-newer GPUs other than GA100, instantaneous on GA100 and older; "
            f"the architecture of {name} is unknown")
