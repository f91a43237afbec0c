"""TensorFlow's profiler (``tf.profiler.experimental``) for the ``keras2-tf`` and ``keras3-tf`` stacks: host
threads (TensorFlow ops, tf.data) and, on a GPU, the device's kernels and copies, written as an XSpace in a
TensorBoard log directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.instruments.profile.spans import Span, collect_logdir
from bench.instruments.profile.summary import WINDOW
from bench.instruments.profile.xla import TF_SCOPE, command_buffers_off


class Profiler:
    """``tf.profiler.experimental.start`` / ``stop`` with its default levels written out (host tracer 2, Python
    tracer off, device tracer on: tensorflow/python/profiler/profiler_v2.py@v2.21.0 ``ProfilerOptions``),
    ``tf.profiler.experimental.Trace(WINDOW)`` around the profiled steps. On a GPU, ``execution_differs`` says
    that the XLA clusters run their command buffers op by op under it (``xla.command_buffers_off``, ``TF_SCOPE``)."""

    activities = ["host", "device"]

    def __init__(self, device: str, workdir: Path) -> None:
        import tensorflow as tf

        self.tf, self.logdir = tf, workdir / "tensorflow"
        self.name = f"tf.profiler (tensorflow {tf.__version__})"
        self.options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=2, python_tracer_level=0,
                                                                device_tracer_level=1)
        self.mark: Any = None
        differs = command_buffers_off(device, os.environ.get("XLA_FLAGS", ""))
        self.execution_differs = differs + TF_SCOPE if differs else None

    def start(self) -> None:
        self.tf.profiler.experimental.start(str(self.logdir), options=self.options)

    def begin(self) -> None:
        self.mark = self.tf.profiler.experimental.Trace(WINDOW)
        self.mark.__enter__()

    def end(self) -> None:
        self.mark.__exit__(None, None, None)

    def stop(self) -> None:
        self.tf.profiler.experimental.stop()

    def collect(self, base: Path) -> tuple[list[Span], dict[str, Any]]:
        return collect_logdir(self.logdir, base)
