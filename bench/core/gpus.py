"""GPU models by their NVML names: which family of the datasheet tables a name belongs to and whether it is a MIG
slice's. Standard library only: the run (MFU's peaks, ``bench.run.flops``) and the report (whether a cell ran on the
GPU a source published from) read the same rule.
"""

from __future__ import annotations

import re


def is_mig_name(name: str | None) -> bool:
    """Whether an NVML device name is a MIG slice's (``NVIDIA A100-SXM4-40GB MIG 1g.5gb``)."""
    return bool(re.search(r"\bMIG\b", str(name or "")))


def gpu_family(name: str | None) -> str | None:
    """The GPU family of an NVML device name, the key of ``bench.run.flops.PEAK_TFLOPS`` (e.g. ``NVIDIA H100 80GB
    HBM3`` -> ``H100 SXM``, ``NVIDIA A100-SXM4-40GB`` -> ``A100``), None when the GPU is not one of them (H100/H200
    NVL have other clocks and are left out) or the name is a MIG slice's (``is_mig_name``: a slice is not the whole
    GPU)."""
    if not name or is_mig_name(name):
        return None
    n = name.upper()
    if "NVL" in n:
        return None
    if "A100" in n:
        return "A100"
    if "H100" in n:
        return "H100 PCIe" if "PCIE" in n else "H100 SXM"
    if "H200" in n:
        return "H200"
    if "A10G" in n:
        return "A10G"
    if n.replace("NVIDIA", "").strip() == "L4":
        return "L4"
    return None
