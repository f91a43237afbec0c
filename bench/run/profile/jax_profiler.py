"""JAX's profiler (``jax.profiler``) for the ``jax`` and ``keras3-jax`` stacks: host threads and, on a GPU, the
device's kernels and copies, written as an XSpace in a TensorBoard log directory."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from bench.run.profile.spans import Span, collect_logdir
from bench.run.profile.summary import WINDOW

#: Why a profiled XLA step on a GPU runs otherwise than a timed one: while a profiler session is active, XLA runs
#: each command buffer thunk as its thunk sequence, op by op, instead of replaying it as a CUDA graph (jax 0.10.2's
#: CUDA plugin, xla_cuda_plugin.so: 'Execute command buffer thunk as a regular thunk sequence because we detected
#: active profiling session'; flag xla_enable_command_buffers_during_profiling, off by default: 'By default,
#: enabling profiling switches from command buffers to op-by-op mode').
COMMAND_BUFFERS_OFF = ("XLA runs its command buffers (CUDA graphs) op by op while the profiler is active "
                       "(xla_enable_command_buffers_during_profiling is off): the profiled steps launch each kernel "
                       "where the timed ones replay graphs")


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


class Profiler:
    """``jax.profiler.start_trace`` / ``stop_trace`` with the Python tracer off (it traces every Python call, a cost
    the steps would carry), ``TraceAnnotation(WINDOW)`` around the profiled steps."""

    activities = ["host", "device"]

    def __init__(self, device: str, workdir: Path) -> None:
        import jax

        self.jax, self.logdir = jax, workdir / "jax"
        self.name = f"jax.profiler (jax {jax.__version__})"
        self.options = jax.profiler.ProfileOptions()
        self.options.python_tracer_level = 0
        self.mark: Any = None
        self.execution_differs = command_buffers_off(device, os.environ.get("XLA_FLAGS", ""))

    def start(self) -> None:
        self.jax.profiler.start_trace(str(self.logdir), profiler_options=self.options)

    def begin(self) -> None:
        self.mark = self.jax.profiler.TraceAnnotation(WINDOW)
        self.mark.__enter__()

    def end(self) -> None:
        self.mark.__exit__(None, None, None)

    def stop(self) -> None:
        self.jax.profiler.stop_trace()

    def collect(self, base: Path) -> tuple[list[Span], dict[str, Any]]:
        return collect_logdir(self.logdir, base)
