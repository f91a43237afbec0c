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
    CPU kernels run synchronously, so the barrier is a no-op there (``bench.engines.frameworks``).

    Raises:
        ValueError: unknown backend.
    """
    from bench.engines.frameworks import framework

    return framework(backend).barrier(device)


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


def execution_stats(executions: Sequence[tuple[float, int]]) -> dict[str, Any]:
    """``step_stats_ms`` over timed executions: (duration s, steps it ran) pairs.

    One step per execution: the statistics are over steps (``ms_per_step_basis`` "step"). With
    ``steps_per_execution`` > 1 only whole executions are timed (Keras calls the batch hooks once per
    execution), so p50/p90/std/min/max are over executions' mean step times (basis "execution"), and
    null with fewer than two executions, where a spread would only restate the mean; the mean is total
    time over total steps either way. ``executions`` counts the timed executions.
    """
    if all(k == 1 for _, k in executions):
        return {**step_stats_ms([d for d, _ in executions]), "ms_per_step_basis": "step",
                "executions": len(executions)}
    out = step_stats_ms([d / k for d, k in executions])
    steps = sum(k for _, k in executions)
    out.update(ms_per_step_mean=1000.0 * sum(d for d, _ in executions) / steps, steps=steps,
               ms_per_step_basis="execution", executions=len(executions))
    if len(executions) < 2:
        out.update({f"ms_per_step_{k}": None for k in ("p50", "p90", "std", "min", "max")})
    return out


class EpochTimer:
    """Collects step timestamps per epoch, with a device barrier before each clock read.

    Call ``begin_epoch()`` before the first step of an epoch, ``end_step()`` after each step (or
    ``end_step(k)`` after an execution of k steps, as Keras reports with ``steps_per_execution`` > 1:
    the execution's time is split evenly over its steps), and ``end_epoch()`` after the epoch's last
    training step, before any validation. ``summary`` separates the first epoch (tracing/compilation)
    from the steady ones. ``window`` (a ``bench.telemetry`` sampler, or None) gets ``mark()`` at each
    epoch start, after the barrier and before the clock read (its own cost is not counted in any step),
    and ``end_epoch()`` after the barrier that ends the epoch's training steps: the energy window holds
    exactly the steps that the time metrics hold.
    """

    def __init__(self, barrier: Callable[[], None], window: Any = None):
        self._barrier = barrier
        self._window = window
        self._last = 0.0
        self._open = False
        #: per epoch: each step's duration (s; an execution of k steps counts k times its mean)
        self.epochs: list[list[float]] = []
        #: per epoch: each execution's (duration s, steps it ran)
        self.executions: list[list[tuple[float, int]]] = []

    def begin_epoch(self) -> None:
        self._barrier()
        if self._window is not None:
            self._window.mark()
        self._last = clock()
        self.epochs.append([])
        self.executions.append([])
        self._open = True

    def end_epoch(self) -> None:
        """Close the current epoch's training steps (a no-op when no epoch is open)."""
        if not self._open:
            return
        self._open = False
        if self._window is not None:
            self._barrier()
            self._window.end_epoch()

    def end_step(self, steps: int = 1) -> None:
        self._barrier()
        now = clock()
        steps = max(int(steps), 1)
        self.epochs[-1].extend([(now - self._last) / steps] * steps)
        self.executions[-1].append((now - self._last, steps))
        self._last = now

    def summary(self, batch_size: int, n_train: int) -> dict[str, float | int | None]:
        """Metrics over the recorded epochs.

        Returns:
            ``epochs``, ``steps_per_epoch``, ``first_epoch_s`` (includes compilation), ``total_train_s``
            (training steps of all epochs, compilation included, validation excluded: the tuning study's
            "time for 41 epochs"),
            ``epoch_s`` (each epoch's training steps, s: a sporadic epoch-start stall of the framework
            shows here), ``steady_epoch_s`` (mean of epochs 2..N; None with one epoch), ``samples_per_s``
            (steady epochs; None with one epoch), and ``execution_stats`` over the steady executions
            (over the first epoch's after its first one if there is only one epoch).
        """
        if not self.epochs:
            raise ValueError("no epoch recorded")
        epoch_s = [sum(e) for e in self.epochs]
        steady = self.epochs[1:]
        execs = self.executions or [[(d, 1) for d in e] for e in self.epochs]
        timed = [x for e in execs[1:] for x in e] if steady else execs[0][1:]
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
            **execution_stats(timed),
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
