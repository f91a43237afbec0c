"""PyTorch's adapter (``bench.models.engines.frameworks.Framework``), for the PyTorch family and Keras on PyTorch. Its
methods import PyTorch lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.models.engines.frameworks import Framework


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
        2.13: setting one rewrites the other) and ``cudnn.allow_tf32`` (convolutions and cuDNN RNNs); then, where
        torch has them (2.9 and later), every per-op ``fp32_precision`` switch to the same mode ('tf32' or 'ieee':
        ``torch_fp32_precision_switches``). The legacy pair alone leaves the cuDNN-wide
        ``torch.backends.cudnn.fp32_precision`` at 'none', and torch 2.13's inductor builds its Triton convolution
        kernels with ``ALLOW_TF32 = torch.backends.cudnn.fp32_precision == "tf32"`` (torch/_inductor/kernel/conv.py),
        so under torch.compile max-autotune such a kernel would run FP32 while cuDNN's ran TF32. The legacy
        switches are set first and kept consistent with the new ones, so code that still reads them (inductor's
        backward convolution templates read ``cudnn.allow_tf32``) gets an answer, not torch's "mix of legacy and
        new APIs" error."""
        import torch

        torch.set_float32_matmul_precision("high" if enabled else "highest")
        torch.backends.cudnn.allow_tf32 = enabled
        for switch in torch_fp32_precision_switches(torch).values():
            switch.fp32_precision = "tf32" if enabled else "ieee"

    def tf32_switches(self) -> dict[str, Any]:
        """The legacy switches (``allow_tf32``, ``float32_matmul_precision``) and, where torch has them, the per-op
        ``fp32_precision`` ones read through that API ('tf32', 'ieee', or 'none': inherited, no TF32 by itself). A
        legacy switch torch refuses to read (its "mix of legacy and new APIs" error, after a library set the new
        ones inconsistently) is None; the ``fp32_precision`` keys then still say what ran."""
        import torch

        def legacy(read: Callable[[], Any]) -> Any:
            try:
                return read()
            except RuntimeError:
                return None

        out = {"torch_matmul_allow_tf32": legacy(lambda: torch.backends.cuda.matmul.allow_tf32),
               "torch_cudnn_allow_tf32": legacy(lambda: torch.backends.cudnn.allow_tf32),
               "torch_float32_matmul_precision": legacy(torch.get_float32_matmul_precision)}
        out.update({key: switch.fp32_precision for key, switch in torch_fp32_precision_switches(torch).items()})
        return out

    def peak_bytes(self) -> int | None:
        import torch

        return int(torch.cuda.max_memory_allocated())

    def barrier(self, device: str) -> Callable[[], None]:
        """``torch.cuda.synchronize()`` on GPU; CPU kernels run synchronously, so a no-op there."""
        import torch

        if device == "gpu" and torch.cuda.is_available():
            return torch.cuda.synchronize
        return lambda: None


def torch_fp32_precision_switches(torch: Any) -> dict[str, Any]:
    """Record key -> the object whose ``fp32_precision`` is one of torch's per-op TF32 switches (torch 2.9 and
    later; empty where torch has none of them): float32 matmuls (``torch.backends.cuda.matmul``), cuDNN convolutions
    (``cudnn.conv``), cuDNN RNNs (``cudnn.rnn``), and the cuDNN-wide one (``torch.backends.cudnn``: what inductor's
    Triton convolution kernels follow, and what an op of the CUDA backend without its own setting inherits)."""
    cudnn = torch.backends.cudnn
    switches = {"torch_matmul_fp32_precision": torch.backends.cuda.matmul,
                "torch_cudnn_conv_fp32_precision": getattr(cudnn, "conv", None),
                "torch_cudnn_rnn_fp32_precision": getattr(cudnn, "rnn", None),
                "torch_cudnn_fp32_precision": cudnn}
    try:
        if all(s is not None and isinstance(s.fp32_precision, str) for s in switches.values()):
            return switches
    except AttributeError:  # an older torch: only the legacy switches
        pass
    return {}


#: The adapter ``bench.models.engines.frameworks.framework("torch")`` returns.
ADAPTER = Torch()
