"""GPU models by their NVML names: which family of the datasheet tables a name belongs to and whether it is a MIG
slice's. Standard library only: the run (MFU's peaks, ``bench.models.flops``) and the report (whether a cell ran on the
GPU a source published from) read the same rule.
"""

from __future__ import annotations

import re


def is_mig_name(name: str | None) -> bool:
    """Whether an NVML device name is a MIG slice's (``NVIDIA A100-SXM4-40GB MIG 1g.5gb``)."""
    return bool(re.search(r"\bMIG\b", str(name or "")))


def _token(token: str, name: str) -> bool:
    """Whether ``token`` is a whole token of the upper-cased NVML name ``name``: not part of a longer word, so that
    ``A100`` is not found in ``RTX A1000`` nor ``H200`` in ``GH200``."""
    return bool(re.search(rf"\b{token}\b", name))


def gpu_family(name: str | None) -> str | None:
    """The GPU family of an NVML device name, the key of ``bench.models.flops.PEAK_TFLOPS`` (e.g. ``NVIDIA H100 80GB
    HBM3`` -> ``H100 SXM``, ``NVIDIA A100-SXM4-40GB`` -> ``A100``), matched by whole tokens (``_token``). None when
    the GPU is not one of them (H100/H200 NVL have other clocks and are left out; so is the GH200 superchip, whose
    peaks the table does not hold; an ``RTX A1000`` is no A100) or the name is a MIG slice's (``is_mig_name``: a
    slice is not the whole GPU)."""
    if not name or is_mig_name(name):
        return None
    n = name.upper()
    if _token("NVL", n):
        return None
    if _token("A100", n):
        return "A100"
    if _token("H100", n):
        return "H100 PCIe" if _token("PCIE", n) else "H100 SXM"
    if _token("H200", n):
        return "H200"
    if _token("A10G", n):
        return "A10G"
    if n.replace("NVIDIA", "").strip() == "L4":
        return "L4"
    return None


def model_name(name: str | None) -> str:
    """An NVML device name without its vendor prefix, upper-cased, spaces collapsed: older drivers name the same GPU
    ``A100-SXM4-40GB`` that newer ones name ``NVIDIA A100-SXM4-40GB``. Empty for None."""
    n = " ".join(str(name or "").upper().split())
    return n.removeprefix("NVIDIA ").strip()
