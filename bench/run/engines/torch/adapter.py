"""PyTorch's adapter (``bench.run.engines.frameworks.Framework``), for the PyTorch family and Keras on PyTorch. Its
methods import PyTorch lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.run.engines.frameworks import Framework


class Torch(Framework):
    """PyTorch: ``torch.cuda`` devices, the matmul/cuDNN TF32 flags, ``max_memory_allocated``; ``synchronize``."""

    module = "torch"

    def gpu_devices(self) -> list[str]:
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]

    def gpu_matmul(self, a) -> float:
        import torch

        x = torch.from_numpy(a).cuda()
        return float((x @ x).sum().item())

    def gemm_call(self, dtype: str, n: int, device: str) -> Callable[[], Any]:
        import torch

        dev = "cuda" if device == "gpu" else "cpu"
        a = torch.randn(n, n, device=dev, dtype=getattr(torch, dtype))
        b = torch.randn(n, n, device=dev, dtype=getattr(torch, dtype))
        return lambda: a @ b

    def set_tf32(self, enabled: bool) -> None:
        """``set_float32_matmul_precision('high'|'highest')`` (the same switch as ``cuda.matmul.allow_tf32`` in torch
        2.13: setting one rewrites the other) and ``cudnn.allow_tf32`` (convolutions and cuDNN RNNs)."""
        import torch

        torch.set_float32_matmul_precision("high" if enabled else "highest")
        torch.backends.cudnn.allow_tf32 = enabled

    def tf32_switches(self) -> dict[str, Any]:
        import torch

        return {"torch_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                "torch_cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                "torch_float32_matmul_precision": torch.get_float32_matmul_precision()}

    def peak_bytes(self) -> int | None:
        import torch

        return int(torch.cuda.max_memory_allocated())

    def barrier(self, device: str) -> Callable[[], None]:
        """``torch.cuda.synchronize()`` on GPU; CPU kernels run synchronously, so a no-op there."""
        import torch

        if device == "gpu" and torch.cuda.is_available():
            return torch.cuda.synchronize
        return lambda: None


#: The adapter ``bench.run.engines.frameworks.framework("torch")`` returns.
ADAPTER = Torch()
