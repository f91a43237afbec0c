"""JAX's profiler (``jax.profiler``) for the ``jax`` and ``keras3-jax`` stacks: host threads and, on a GPU, the
device's kernels and copies, written as an XSpace in a TensorBoard log directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.instruments.profile.spans import Span, collect_logdir
from bench.instruments.profile.summary import WINDOW
from bench.instruments.profile.xla import command_buffers_off


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
