"""What XLA on a GPU runs otherwise while a profiler is active, for the profilers of the stacks whose steps XLA
compiles (``jax_profiler``, ``tensorflow_profiler``): each states it in ``profile.execution_differs``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Why a profiled XLA step on a GPU runs otherwise than a timed one: while a profiler session is active, XLA runs
#: each command buffer thunk as its thunk sequence, op by op, instead of replaying it as a CUDA graph. jax 0.10.2's
#: CUDA plugin (xla_cuda_plugin.so) and TensorFlow 2.21.0's libtensorflow_cc.so.2 both hold 'Execute command buffer
#: thunk as a regular thunk sequence because we detected active profiling session' and the flag
#: xla_enable_command_buffers_during_profiling, off by default ('By default, enabling profiling switches from
#: command buffers to op-by-op mode').
COMMAND_BUFFERS_OFF = ("XLA runs its command buffers (CUDA graphs) op by op while the profiler is active "
                       "(xla_enable_command_buffers_during_profiling is off): the profiled steps launch each kernel "
                       "where the timed ones replay graphs")
#: TensorFlow's part of it: only what XLA compiled runs otherwise (Keras 3 turns jit_compile on for its TensorFlow
#: backend when a GPU is visible, keras/src/trainers/trainer.py@v3.15.1 ``_resolve_auto_jit_compile``; tf-keras
#: compiles its optimizer's update with XLA on a GPU); TensorFlow's own ops run as they did.
TF_SCOPE = ("; on TensorFlow this holds for the XLA clusters only (Keras' jit_compile step, tf-keras' XLA-compiled "
            "update), the TensorFlow ops outside XLA run as in the timed steps")


def _flag(flags: str, name: str) -> str | None:
    """The last value ``XLA_FLAGS`` gives ``--name`` (``--name=value``; a bare ``--name`` is true), None if unset."""
    found = list(re.finditer(rf"--{name}(?:=(\S*))?(?:\s|$)", flags))
    return None if not found else "true" if found[-1].group(1) is None else found[-1].group(1)


def command_buffers_off(device: str, flags: str) -> str | None:
    """``COMMAND_BUFFERS_OFF`` on a GPU unless ``flags`` (``XLA_FLAGS``) keep command buffers during profiling or
    turn them off altogether (an empty ``xla_gpu_enable_command_buffer``); None on a CPU."""
    if device != "gpu":
        return None
    if (_flag(flags, "xla_enable_command_buffers_during_profiling") or "").lower() in ("true", "1"):
        return None
    if _flag(flags, "xla_gpu_enable_command_buffer") == "":
        return None
    return COMMAND_BUFFERS_OFF


def tf_compiled(settings: Mapping[str, Any]) -> bool | None:
    """Whether a TensorFlow stack's cell ran XLA clusters, as its record's ``settings`` say it took effect: the
    model's ``jit_compile`` (Keras 3's train, test and predict functions, keras/src/backend/tensorflow/trainer.py
    @v3.15.1: ``tf.function(jit_compile=self.jit_compile)``; tf-keras' model) or tf-keras' optimizer's
    (``settings.optimizer.jit_compile``, its own XLA update step). True when either is true, False when those
    recorded are all false, None when the record holds neither (then ``TF_SCOPE`` is said, unchecked)."""
    optimizer = settings.get("optimizer")
    flags = [settings.get("jit_compile"), optimizer.get("jit_compile") if isinstance(optimizer, Mapping) else None]
    known = [f for f in flags if isinstance(f, bool)]
    return True if any(known) else False if known else None
