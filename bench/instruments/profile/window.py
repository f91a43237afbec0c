"""The profiled window and the framework profilers behind it.

Each framework's profiler is one module here, ``bench.instruments.profile.<framework>_profiler`` (a framework of
``bench.core.families.FRAMEWORKS``), with a ``Profiler`` class: ``torch_profiler`` (``torch.profiler``, CPU and,
on a GPU, CUDA activities), ``jax_profiler`` (``jax.profiler``), ``tensorflow_profiler`` (``tf.profiler``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from bench.instruments.profile.spans import Span
from bench.instruments.timing import clock


class Profiler(Protocol):
    """A framework's profiler, started and stopped once.

    Attributes:
        name: the profiler and the framework's version (``torch.profiler (torch 2.13.0)``).
        activities: what it records (``cpu``, ``cuda``; the XPlane profilers: ``host``, ``device``).
    """

    name: str
    activities: list[str]

    def start(self) -> None:
        """Start recording."""

    def begin(self) -> None:
        """Open the annotation that marks the profiled steps (``summary.WINDOW``)."""

    def end(self) -> None:
        """Close it."""

    def stop(self) -> None:
        """Stop recording."""

    def collect(self, base: Path) -> tuple[list[Span], dict[str, Any]]:
        """The recorded spans, and the files written: the Chrome trace ``<base>.trace.json.gz`` and, for the
        XPlane profilers, TensorBoard's log directory ``<base>.tensorboard`` (``profile`` block fields:
        ``trace``, ``trace_bytes``, ``tensorboard``, ``tensorboard_bytes``)."""


def profiler_for(backend: str, device: str, workdir: Path) -> Profiler:
    """The ``Profiler`` of framework ``backend`` (``bench.instruments.profile.<backend>_profiler``) for ``device``,
    writing its raw output under ``workdir``.

    Raises:
        ValueError: no profiler module for ``backend``.
    """
    try:
        module = importlib.import_module(f"bench.instruments.profile.{backend}_profiler")
    except ModuleNotFoundError as e:
        raise ValueError(f"no profiler for framework {backend!r}") from e
    return module.Profiler(device, workdir)


class Window:
    """The profiled steps. ``arm`` starts the profiler before the warm-up steps, so that its start-up and first-step
    costs (CUPTI's initialisation, its buffers' allocation) fall on them; ``start`` waits for the device
    (``barrier``) and opens the profiler's annotation; ``stop`` waits for the device again, reads the clock, closes
    the annotation and stops the profiler. ``wall_s`` is the time between the two barriers (s)."""

    def __init__(self, profiler: Profiler, barrier: Callable[[], None]) -> None:
        self.profiler, self.barrier = profiler, barrier
        self.armed = self.started = self.stopped = False
        self.wall_s: float | None = None
        self._t0 = 0.0

    @property
    def open(self) -> bool:
        return self.started and not self.stopped

    def arm(self) -> None:
        """Start the profiler (once; ``start`` does it when nothing did before)."""
        if not self.armed:
            self.profiler.start()
            self.armed = True

    def start(self) -> None:
        if self.started:
            raise RuntimeError("the profile window was opened twice")
        if not self.armed:
            self.arm()
        self.barrier()
        self.started = True
        self.profiler.begin()
        self._t0 = clock()

    def stop(self) -> None:
        if not self.open:
            raise RuntimeError("the profile window was closed without being open")
        self.barrier()
        self.wall_s = clock() - self._t0
        self.profiler.end()
        self.stopped = True
        self.profiler.stop()

    def abandon(self) -> None:
        """Stop a profiler left running by a failed step (its recording is discarded)."""
        if self.armed and not self.stopped:
            self.stopped = True
            try:
                if self.started:
                    self.profiler.end()
            finally:
                self.profiler.stop()


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (a file: its size)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
