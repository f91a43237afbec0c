"""Per-backend switches and read-outs: GPU visibility, TF32, peak device memory.

Each function imports its framework lazily; call them only inside a cell or probe process.
"""

from __future__ import annotations

import os
from typing import Any


def gpu_devices(backend: str) -> list[str]:
    """Names of the GPUs the framework itself can use (empty when none)."""
    if backend == "tensorflow":
        import tensorflow as tf

        return [d.name for d in tf.config.list_physical_devices("GPU")]
    if backend == "jax":
        import jax

        try:
            return [str(d) for d in jax.devices("gpu")]
        except RuntimeError:  # no GPU backend initialised
            return []
    if backend == "torch":
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    raise ValueError(f"unknown backend {backend!r}")


def set_tf32(backend: str, enabled: bool) -> dict[str, Any]:
    """Set the framework's TF32 switches and return the effective values.

    The reference runs used ``NVIDIA_TF32_OVERRIDE=0`` (set in compose); the framework switches are set
    as well because their defaults differ (TF and JAX on, PyTorch matmul off, cuDNN on).
    """
    out: dict[str, Any] = {"NVIDIA_TF32_OVERRIDE": os.environ.get("NVIDIA_TF32_OVERRIDE")}
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(enabled)
        out["tf_tensor_float_32_execution"] = tf.config.experimental.tensor_float_32_execution_enabled()
    elif backend == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if enabled else "highest")
        out["jax_default_matmul_precision"] = jax.config.jax_default_matmul_precision
    elif backend == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled
        out["torch_matmul_allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
        out["torch_cudnn_allow_tf32"] = torch.backends.cudnn.allow_tf32
        out["torch_float32_matmul_precision"] = torch.get_float32_matmul_precision()
    return out


def cpp_compiler_missing() -> bool:
    """True when no C++ compiler is on PATH: torch.compile (inductor) cannot build CPU kernels then."""
    import shutil

    return not any(shutil.which(c) for c in ("c++", "g++", "clang++"))


def device_peak_bytes(backend: str, device: str) -> int | None:
    """Peak device memory allocated by the framework in this process (bytes), None on CPU or unknown."""
    if device != "gpu":
        return None
    try:
        if backend == "tensorflow":
            import tensorflow as tf

            return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])
        if backend == "jax":
            import jax

            stats = jax.devices()[0].memory_stats() or {}
            return stats.get("peak_bytes_in_use")
        if backend == "torch":
            import torch

            return int(torch.cuda.max_memory_allocated())
    except Exception:  # a missing counter is recorded as null, never a failed cell
        return None
    return None


def is_oom(exc: BaseException) -> bool:
    """True when ``exc`` is an out-of-memory error of any framework."""
    text = f"{type(exc).__name__}: {exc}".lower()
    return isinstance(exc, MemoryError) or any(
        s in text for s in ("out of memory", "outofmemoryerror", "resource_exhausted", "resourceexhausted"))
