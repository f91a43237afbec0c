"""NVML (nvidia-ml-py's ``pynvml``) for the cell's GPU: the one place that imports it, initialises it, finds the
cell's device, describes its errors and shuts it down. Facts relied on: docs/platform.md, "NVML".

Seam for tests: every opener takes ``nv``, a pynvml-compatible module; None imports ``pynvml``, so a test either
passes a fake or puts one in ``sys.modules["pynvml"]``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from typing import Any


def load(nv: Any = None) -> Any:
    """``nv``, or the ``pynvml`` module (provided by nvidia-ml-py) when None. Raises ImportError without it."""
    if nv is not None:
        return nv
    import pynvml  # provided by nvidia-ml-py

    return pynvml


def init(nv: Any = None) -> Any:
    """``load(nv)`` with ``nvmlInit`` called; raises what the import or ``nvmlInit`` raises (no library, no driver)."""
    nv = load(nv)
    nv.nvmlInit()
    return nv


def nvml_index(env: Mapping[str, str] | None = None) -> int | str:
    """The NVML device of the cell's first visible GPU: an index, or a UUID from CUDA_VISIBLE_DEVICES
    (``env``, default ``os.environ``).

    NVML ignores CUDA_VISIBLE_DEVICES, so the mapping is done here.
    """
    first = (env if env is not None else os.environ).get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if not first:
        return 0
    return int(first) if first.isdigit() else first


def device_handle(nv: Any, index: int | str) -> Any:
    """NVML's handle of the GPU ``index`` (an NVML index, or a UUID looked up by UUID); raises NVML's error."""
    return nv.nvmlDeviceGetHandleByUUID(index) if isinstance(index, str) else nv.nvmlDeviceGetHandleByIndex(index)


def open_device(nv: Any = None) -> tuple[Any, Any]:
    """(initialised module, handle of the cell's GPU, ``nvml_index()``); raises what import, init or lookup raise."""
    nv = init(nv)
    return nv, device_handle(nv, nvml_index())


def is_mig_slice(nv: Any, handle: Any, name: str | None = None) -> bool:
    """Whether ``handle`` is a MIG device (a slice of a GPU), as ``nvmlDeviceGetHandleByUUID`` returns for a
    ``MIG-...`` UUID in CUDA_VISIBLE_DEVICES: ``nvmlDeviceIsMigDeviceHandle`` says so (nvidia-ml-py 13.615.71 returns
    a ``c_uint``), or, where the driver cannot answer, its NVML name carries the profile
    (``NVIDIA A100-SXM4-40GB MIG 1g.5gb``)."""
    try:
        answer = nv.nvmlDeviceIsMigDeviceHandle(handle)
        if int(getattr(answer, "value", answer)):
            return True
    except Exception:  # FunctionNotFound on old drivers, a fake without it: the name decides
        pass
    return bool(re.search(r"\bMIG\b", str(name or "")))


def describe_error(e: BaseException) -> str:
    """``"<type>: <message>"`` of an NVML (or import) error, for a record's reason."""
    return f"{type(e).__name__}: {e}".strip()


def function_not_found(nv: Any, e: BaseException) -> bool:
    """Whether ``e`` says the driver's NVML (or the ``pynvml`` module) lacks the function called: pynvml raises
    ``NVMLError`` with ``NVML_ERROR_FUNCTION_NOT_FOUND`` (``NVMLError_FunctionNotFound``) for a symbol the driver's
    library does not export, and a module without the wrapper raises AttributeError."""
    if isinstance(e, AttributeError):
        return True
    return getattr(e, "value", None) == getattr(nv, "NVML_ERROR_FUNCTION_NOT_FOUND", 13)


def shutdown(nv: Any) -> None:
    """``nvmlShutdown``; never raises (a failed shutdown changes no reading)."""
    with contextlib.suppress(Exception):
        nv.nvmlShutdown()
