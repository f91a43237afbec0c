"""Clocks, device barriers and the statistics reported for step times.

Rule: on a GPU, synchronise the device before every clock read (see ../shared/docs/workloads.md,
"Timing inside Keras fit/predict": Keras never synchronises, so begin-only timestamps measure
dispatch, not compute).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

clock: Callable[[], float] = time.perf_counter


def make_barrier(backend: str, device: str) -> Callable[[], None]:
    """Return a function that blocks until all queued work of ``backend`` on ``device`` is done.

    Args:
        backend: ``tensorflow``, ``jax`` or ``torch``; the framework must already be importable.
        device: ``cpu`` or ``gpu``.

    TensorFlow: ``tf.test.experimental.sync_devices()``. JAX: ``block_until_ready`` on every live
    array (JAX dispatches asynchronously on CPU too). PyTorch: ``torch.cuda.synchronize()`` on GPU;
    CPU kernels run synchronously, so the barrier is a no-op there.
    """
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.test.experimental.sync_devices
    if backend == "jax":
        import jax

        def jax_barrier() -> None:
            jax.block_until_ready(jax.live_arrays())

        return jax_barrier
    if backend == "torch":
        import torch

        if device == "gpu" and torch.cuda.is_available():
            return torch.cuda.synchronize
        return lambda: None
    raise ValueError(f"unknown backend {backend!r}")


def step_stats_ms(durations_s: Sequence[float]) -> dict[str, float | int | None]:
    """Summarise per-step durations.

    Args:
        durations_s: wall time of each step, in seconds.

    Returns:
        ``ms_per_step_mean/p50/p90/std/min/max`` in milliseconds and ``steps`` (count); the
        statistics are None when there are no steps. std is the population standard deviation.
    """
    keys = ("mean", "p50", "p90", "std", "min", "max")
    if len(durations_s) == 0:
        return {**{f"ms_per_step_{k}": None for k in keys}, "steps": 0}
    ms = np.asarray(durations_s, dtype=np.float64) * 1000.0
    values = {
        "mean": float(ms.mean()),
        "p50": float(np.percentile(ms, 50)),
        "p90": float(np.percentile(ms, 90)),
        "std": float(ms.std()),
        "min": float(ms.min()),
        "max": float(ms.max()),
    }
    if not all(math.isfinite(v) for v in values.values()):
        raise ValueError("non-finite step duration")
    return {**{f"ms_per_step_{k}": v for k, v in values.items()}, "steps": len(ms)}


class EpochTimer:
    """Collects step timestamps per epoch, with a device barrier before each clock read.

    Call ``begin_epoch()`` before the first step of an epoch and ``end_step()`` after each step (or
    ``end_step(k)`` after an execution of k steps, as Keras reports with ``steps_per_execution`` > 1:
    the execution's time is split evenly over its steps). ``summary`` separates the first epoch
    (tracing/compilation) from the steady ones. ``on_epoch_begin`` (e.g. ``Telemetry.mark``) runs after
    the barrier and before the clock read, so its own cost is not counted in any step.
    """

    def __init__(self, barrier: Callable[[], None], on_epoch_begin: Callable[[], None] | None = None):
        self._barrier = barrier
        self._on_epoch_begin = on_epoch_begin
        self._last = 0.0
        self.epochs: list[list[float]] = []

    def begin_epoch(self) -> None:
        self._barrier()
        if self._on_epoch_begin is not None:
            self._on_epoch_begin()
        self._last = clock()
        self.epochs.append([])

    def end_step(self, steps: int = 1) -> None:
        self._barrier()
        now = clock()
        steps = max(int(steps), 1)
        self.epochs[-1].extend([(now - self._last) / steps] * steps)
        self._last = now

    def summary(self, batch_size: int, n_train: int) -> dict[str, float | int | None]:
        """Metrics over the recorded epochs.

        Returns:
            ``epochs``, ``steps_per_epoch``, ``first_epoch_s`` (includes compilation), ``total_train_s``
            (training steps of all epochs, compilation included, validation excluded: the tuning study's
            "time for 41 epochs"),
            ``epoch_s`` (each epoch's training steps, s: a sporadic epoch-start stall of the framework
            shows here), ``steady_epoch_s`` (mean of epochs 2..N; None with one epoch), ``samples_per_s``
            (steady epochs; None with one epoch), and the ``ms_per_step_*`` statistics over steady
            steps (over the first epoch's steps after its first one if there is only one epoch).
        """
        if not self.epochs:
            raise ValueError("no epoch recorded")
        epoch_s = [sum(e) for e in self.epochs]
        steady = self.epochs[1:]
        steps = [d for e in steady for d in e] if steady else self.epochs[0][1:]
        steady_s = float(np.mean(epoch_s[1:])) if steady else None
        return {
            "epochs": len(self.epochs),
            "steps_per_epoch": len(self.epochs[0]),
            "first_epoch_s": epoch_s[0],
            "total_train_s": float(sum(epoch_s)),
            "first_step_s": self.epochs[0][0] if self.epochs[0] else None,
            "epoch_s": epoch_s,
            "steady_epoch_s": steady_s,
            "samples_per_s": (n_train / steady_s) if steady_s else None,
            **step_stats_ms(steps),
        }


def time_calls(call: Callable[[], Any], steps: int, timer: EpochTimer) -> Any:
    """Time ``steps + 1`` calls of ``call``: the first (build/compile) as the timer's first epoch, the others
    as its second, so ``timer.summary`` reports the first apart and its statistics cover steps 2..N.
    Returns the last call's result."""
    timer.begin_epoch()
    call()
    timer.end_step()
    timer.begin_epoch()
    out = None
    for _ in range(steps):
        out = call()
        timer.end_step()
    return out
