"""TF32: a cell's ``tf32`` knob applied to the framework's switches (``set_tf32``), the switches read back
(``tf32_state``), and what they mean for the cell's float32 matmuls, convolutions and recurrent layers
(``TF32_SWITCHES``, ``rnn_on_cudnn``, ``tf32_math``)."""

from __future__ import annotations

import os
from typing import Any

from bench.models.engines import frameworks


def tf32_state(backend: str) -> dict[str, Any]:
    """The process's ``NVIDIA_TF32_OVERRIDE`` and the framework's TF32 switches as they are now (record keys).

    Raises:
        ValueError: unknown backend.
    """
    return {"NVIDIA_TF32_OVERRIDE": os.environ.get("NVIDIA_TF32_OVERRIDE"),
            **frameworks.framework(backend).tf32_switches()}


def set_tf32(backend: str, mode: str) -> dict[str, Any]:
    """Apply a cell's ``tf32`` knob (``settings.TF32_MODES``) and return ``tf32_state`` afterwards: ``default``
    touches nothing (each framework's shipped math mode: TensorFlow and JAX TF32 on, PyTorch matmul off and cuDNN
    on, as the sources ran), ``on``/``off`` set every switch of the framework. The runner sets
    ``NVIDIA_TF32_OVERRIDE=0`` for ``off`` (``knobs.tf32_override``). The worker reads ``tf32_state`` again when the
    cell ends, so the record holds the switches' final values (``tf32_math`` interprets them).

    Raises:
        ValueError: an unknown backend or mode.
    """
    fw = frameworks.framework(backend)
    if mode not in ("default", "on", "off"):
        raise ValueError(f"tf32={mode!r}: expected default, on or off")
    if mode != "default":
        fw.set_tf32(mode == "on")
    return tf32_state(backend)


#: JAX precisions that let float32 matmuls and convolutions use TF32 on a GPU that has it (jax 0.10.2
#: ``jax/_src/lax/lax.py``, ``Precision``: DEFAULT and HIGH "use tensorfloat32 if available (e.g. on A100 and H100)";
#: HIGHEST, alias 'float32', "uses float32"). None is the shipped default: DEFAULT.
JAX_TF32_PRECISIONS = (None, "default", "fastest", "bfloat16", "high", "bfloat16_3x", "tensorfloat32")
#: Record key of each framework switch -> (op kinds it governs, values that allow TF32 there). A recurrent layer's
#: GEMMs are ``rnn_cudnn`` where it ran as cuDNN's RNN kernel, ``rnn_matmul`` where it ran as the framework's own
#: matmuls (``rnn_on_cudnn`` says which): on PyTorch ``cudnn.allow_tf32`` covers cuDNN's RNN kernels (torch 2.13
#: ``backends/cudnn/rnn.py`` ``fp32_precision`` follows it), ``allow_tf32`` / ``float32_matmul_precision`` the
#: matmuls, and torch's per-op ``fp32_precision`` switches (2.9 and later) say the same per op ('tf32' allows it;
#: they agree with the legacy ones in every state ``set_tf32`` leaves); TensorFlow's one switch covers both; JAX's
#: precision covers matmuls (no cell here runs a JAX cuDNN RNN, so none is claimed for one). torch's cuDNN-wide
#: ``torch_cudnn_fp32_precision`` is recorded but not here: it governs inductor's Triton convolutions only.
TF32_SWITCHES: dict[str, tuple[tuple[str, ...], tuple[Any, ...]]] = {
    "tf_tensor_float_32_execution": (("matmul", "conv", "rnn_cudnn", "rnn_matmul"), (True,)),
    "jax_default_matmul_precision": (("matmul", "conv", "rnn_matmul"), JAX_TF32_PRECISIONS),
    "torch_matmul_allow_tf32": (("matmul", "rnn_matmul"), (True,)),
    "torch_cudnn_allow_tf32": (("conv", "rnn_cudnn"), (True,)),
    "torch_matmul_fp32_precision": (("matmul", "rnn_matmul"), ("tf32",)),
    "torch_cudnn_conv_fp32_precision": (("conv",), ("tf32",)),
    "torch_cudnn_rnn_fp32_precision": (("rnn_cudnn",), ("tf32",)),
}


def rnn_on_cudnn(engine: str, device: str) -> bool:
    """Whether the LSTMs of a cell of ``engine`` on ``device`` run as cuDNN's RNN kernel (else as the backend's
    matmuls, step by step). Only plain PyTorch's on a GPU: its workloads use ``nn.LSTM``, which takes cuDNN for CUDA
    float tensors while ``torch.backends.cudnn.enabled`` (torch 2.13 ``aten/src/ATen/native/RNN.cpp`` ``use_cudnn``;
    checked here). Every Keras stack builds its LSTMs as ``bench.models.workloads.common.lstm_2017``, whose
    ``hard_sigmoid`` recurrent activation fails Keras' ``cudnn_ok`` on each backend (keras 3.15.1
    ``backend/{tensorflow,jax,torch}/rnn.py`` ``cudnn_ok`` want ``sigmoid``; tf-keras 2.21.0's
    ``layers/rnn/lstm.py:578-580`` ``_could_use_gpu_kernel`` too), so Keras runs its generic loop of the backend's
    matmuls. Plain JAX's Flax LSTMs are matmuls."""
    if engine != "torch" or device != "gpu":
        return False
    import torch

    return bool(torch.backends.cudnn.enabled and torch.backends.cudnn.is_available())


def tf32_math(effective: dict[str, Any], device: str, rnn_cudnn: bool) -> dict[str, bool]:
    """Whether a cell's float32 matmuls, convolutions and recurrent layers could run as TF32:
    ``{"matmul": bool, "conv": bool, "rnn": bool}``.

    ``effective``: the record's ``settings`` block (the switches ``set_tf32`` returned, and the process's
    ``NVIDIA_TF32_OVERRIDE``). ``rnn_cudnn``: the cell's LSTMs ran as cuDNN's RNN kernel (``rnn_on_cudnn``), so
    ``rnn`` follows the switch that governs that kernel, else the one that governs matmuls. True for an op kind on
    a GPU whose framework switch for it allows TF32 and no ``NVIDIA_TF32_OVERRIDE=0``; TF32 is a tensor-core
    mode, never on a CPU. A switch absent from ``effective`` does not count (a record without the framework's
    switches says False)."""
    out = {"matmul": False, "conv": False, "rnn": False}
    if device != "gpu" or effective.get("NVIDIA_TF32_OVERRIDE") == "0":
        return out
    rnn_kind = "rnn_cudnn" if rnn_cudnn else "rnn_matmul"
    for key, (kinds, allowing) in TF32_SWITCHES.items():
        if key in effective and effective[key] in allowing:
            for kind in kinds:
                if kind in out:
                    out[kind] = True
            if rnn_kind in kinds:
                out["rnn"] = True
    return out
