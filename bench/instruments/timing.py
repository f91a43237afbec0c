"""Clocks, device barriers, the synchronisation cadence and the statistics reported for step times.

Rule: on a GPU, synchronise the device before every clock read (see docs/platform.md,
"Timing inside Keras fit and predict": Keras never synchronises, so begin-only timestamps measure
dispatch, not compute), and only as often as the cell's ``sync`` setting says (``Cadence``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.core.cadence import EPOCH as EPOCH  # the timers' cadence, re-exported
from bench.core.cadence import STEP as STEP
from bench.core.cadence import Cadence as Cadence

clock: Callable[[], float] = time.perf_counter


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




def execution_stats(executions: Sequence[tuple[float, int]], basis: str = "execution") -> dict[str, Any]:
    """``step_stats_ms`` over timed intervals: (duration s, steps it ran) pairs.

    One step per interval: the statistics are over steps (``ms_per_step_basis`` "step"). Otherwise
    p50/p90/std/min/max are over the intervals' mean step times, with ``basis`` naming what an interval
    is: ``execution`` (``steps_per_execution`` > 1: Keras calls the batch hooks once per execution),
    ``window`` (``sync=every:N``) or ``epoch`` (``sync=epoch``). They are null with fewer than two
    intervals, where a spread would only restate the mean; the mean is total time over total steps
    either way. ``executions`` counts the intervals.
    """
    if all(k == 1 for _, k in executions):
        return {**step_stats_ms([d for d, _ in executions]), "ms_per_step_basis": "step",
                "executions": len(executions)}
    out: dict[str, Any] = {**step_stats_ms([d / k for d, k in executions])}
    steps = sum(k for _, k in executions)
    out.update(ms_per_step_mean=1000.0 * sum(d for d, _ in executions) / steps, steps=steps,
               ms_per_step_basis=basis, executions=len(executions))
    if len(executions) < 2:
        out.update({f"ms_per_step_{k}": None for k in ("p50", "p90", "std", "min", "max")})
    return out


class EpochTimer:
    """Times epochs of steps, with a device barrier before each clock read, at a ``Cadence``.

    Call ``begin_epoch()`` before the first step of an epoch, ``end_step()`` after each step (or
    ``end_step(k)`` after an execution of k steps, as Keras reports with ``steps_per_execution`` > 1),
    and ``end_epoch()`` after the epoch's last training step, before any validation (``end_epoch(steps)``
    when the caller did not report its steps: Keras without batch hooks). A barrier and a clock read
    happen at ``begin_epoch``, whenever a window of ``cadence.every`` steps is full, and at
    ``end_epoch`` for the steps not yet timed; so per epoch of S steps: ``step`` 1 + S, ``every:N``
    1 + ceil(S/N), ``epoch`` 2, and a few more in an epoch that ``settle`` runs in (``barriers`` and
    ``clock_reads`` count them all, and go in the record).
    ``summary`` separates the first epoch (tracing/compilation) from the steady ones. ``window`` (a
    ``bench.instruments.telemetry`` sampler, or None) gets ``mark()`` at each epoch start, after the barrier and
    before the clock read (its own cost is not counted in any step), and ``end_epoch()`` after the
    barrier that ends the epoch's training steps: the energy window holds exactly the steps that the
    time metrics hold, under every cadence.
    """

    def __init__(self, barrier: Callable[[], None], window: Any = None, cadence: Cadence = STEP):
        self._barrier = barrier
        self._window = window
        self.cadence = cadence
        self._last = 0.0
        self._open = False
        self._pending = 0
        self.barriers = 0
        self.clock_reads = 0
        #: per epoch: each timed interval's (duration s, steps it ran)
        self.intervals: list[list[tuple[float, int]]] = []
        #: seconds ``settle`` ran (None: it never did)
        self.graph_warmup_s: float | None = None

    def _sync(self) -> None:
        self._barrier()
        self.barriers += 1

    def _read(self) -> float:
        self.clock_reads += 1
        return clock()

    def begin_epoch(self) -> None:
        self._sync()
        if self._window is not None:
            self._window.mark()
        self._last = self._read()
        self.intervals.append([])
        self._pending = 0
        self._open = True

    def _close_interval(self) -> None:
        self._sync()
        now = self._read()
        self.intervals[-1].append((now - self._last, self._pending))
        self._last, self._pending = now, 0

    def end_step(self, steps: int = 1) -> None:
        self._pending += max(int(steps), 1)
        if self.cadence.every is not None and self._pending >= self.cadence.every:
            self._close_interval()

    def end_epoch(self, steps: int | None = None) -> None:
        """Close the current epoch's training steps (a no-op when no epoch is open). ``steps``: the epoch's
        step count, for a caller that did not report them through ``end_step``."""
        if not self._open:
            return
        self._open = False
        if steps is not None:
            self._pending = max(steps - sum(k for _, k in self.intervals[-1]), self._pending)
        if self._pending:
            self._close_interval()
        elif self._window is not None:
            self._sync()
        if self._window is not None:
            self._window.end_epoch()

    def settle(self, work: Callable[[], object], counted: bool) -> None:
        """Run ``work``, what a compiler leaves to a graph's later call than its first (CUDA graph recording:
        ``bench.models.engines.torch.settle``), between barriers, its seconds added to ``graph_warmup_s``.
        ``counted``: as an interval of no steps in the open epoch, so its seconds are in that epoch's training time
        (``epoch_s``: ``first_epoch_s``, ``total_train_s``) and in no step's; else outside every interval. A pending
        interval is closed first, so no step's time holds it; a counted settling's interval then starts where the
        epoch's last one ended."""
        counted = counted and self._open
        if counted:
            if self._pending:
                self._close_interval()
            start = self._last
        else:
            self._sync()
            start = self._read()
        work()
        self._sync()
        now = self._read()
        self.graph_warmup_s = (self.graph_warmup_s or 0.0) + (now - start)
        if counted:
            self.intervals[-1].append((now - start, 0))
            self._last = now

    def summary(self, batch_size: int, n_train: int) -> dict[str, Any]:
        """Metrics over the recorded epochs; ``n_train``: the examples one epoch trains (an augmented epoch of full
        batches drops the partial one: fewer than the training set).

        Returns:
            ``epochs``, ``steps_per_epoch``, ``examples_per_epoch`` (``n_train``), ``first_epoch_s`` (includes
            compilation), ``total_train_s``
            (training steps of all epochs, compilation included, validation excluded: the tuning study's
            "time for 41 epochs"),
            ``epoch_s`` (each epoch's training steps, s: a sporadic epoch-start stall of the framework
            shows here), ``steady_epoch_s`` (mean of epochs 2..N; None with one epoch), ``samples_per_s``
            (steady epochs; None with one epoch), ``first_step_s`` (``step`` cadence only, and only where the first
            timed interval is one step: a Keras execution of several steps is timed whole, so its first step has no
            time of its own; else None),
            ``sync`` (the cadence), ``barriers`` and ``clock_reads`` (how many the timer made), ``graph_warmup_s``
            (``settle``'s seconds; absent where it never ran, so a record without it holds no such field), and
            ``execution_stats`` over the steady intervals (over the first epoch's after its first one if
            there is only one epoch: none under ``epoch`` cadence, whose statistics are then None).

        Raises:
            ValueError: no epoch was recorded.
        """
        if not self.intervals:
            raise ValueError("no epoch recorded")
        epoch_s = [sum(d for d, _ in e) for e in self.intervals]
        steady = self.intervals[1:]
        timed = [x for e in steady for x in e] if steady else self.intervals[0][1:]
        steady_s = float(np.mean(epoch_s[1:])) if steady else None
        first = self.intervals[0][0] if self.intervals[0] else None
        basis = "execution" if self.cadence.every == 1 else self.cadence.basis
        return {
            "epochs": len(self.intervals),
            "steps_per_epoch": sum(k for _, k in self.intervals[0]),
            "examples_per_epoch": n_train,
            "first_epoch_s": epoch_s[0],
            "total_train_s": float(sum(epoch_s)),
            "first_step_s": first[0] if first and first[1] == 1 and self.cadence.every == 1 else None,
            "epoch_s": epoch_s,
            "steady_epoch_s": steady_s,
            "samples_per_s": (n_train / steady_s) if steady_s else None,
            "sync": str(self.cadence),
            "barriers": self.barriers,
            "clock_reads": self.clock_reads,
            **({} if self.graph_warmup_s is None else {"graph_warmup_s": self.graph_warmup_s}),
            **execution_stats(timed, basis),
        }


class EpochClock:
    """Each epoch's span, from its begin to after its validation: the span Keras 2.0.8's progress bar printed with
    ``fit(verbose=1)``, not the 2017 comparison's metric (its notebooks ran ``verbose=0`` and timed the whole call:
    ``fit_metrics``).

    Keras 2.0.8 built its train and test functions before the epoch loop (keras/engine/training.py@2.0.8:1575,
    1582, then ``_fit_loop``); ``ProgbarLogger.on_epoch_begin`` started the epoch's ``Progbar`` clock
    (keras/callbacks.py@2.0.8:270-280, keras/utils/generic_utils.py@2.0.8:266) and ``on_epoch_end`` printed
    ``now - start`` (callbacks.py@2.0.8:303-309), which ``_fit_loop`` calls after the epoch's validation
    (training.py@2.0.8:1131, 1151, 1203). So an epoch's span ran from its begin to after its validation, graph
    building excluded. Call ``begin()`` where an epoch begins and ``end()`` after its validation; each reads the
    clock after a device barrier (ours: Keras 2.0.8 read ``time.time()`` without one, after a ``session.run``
    that had already returned the batch's loss). ``epoch_s`` holds each epoch's seconds.
    """

    def __init__(self, barrier: Callable[[], None]):
        self._barrier = barrier
        self._start: float | None = None
        #: each epoch's seconds, begin to after its validation
        self.epoch_s: list[float] = []

    def begin(self) -> None:
        self._barrier()
        self._start = clock()

    def end(self) -> None:
        """Close the open epoch (a no-op when none is open)."""
        if self._start is None:
            return
        self._barrier()
        self.epoch_s.append(clock() - self._start)
        self._start = None


def fit_metrics(epoch_s: Sequence[float], call_s: float) -> dict[str, Any]:
    """The 2017 Keras backend comparison's metric, and each epoch's span beside it.

    The comparison's notebooks (github.com/jasmeetsb/deep-learning-keras-projects@fa5f333,
    keras-performance-comparison/keras_perf_test_*.ipynb, e.g. keras_perf_test_mnist_mlp.ipynb:156) time the whole
    training call with IPython's ``%timeit -r 1 -n 1 model.fit(..., verbose=0, validation_data=...)``, and the post's
    s/epoch is read as that time over the epochs. The saved outputs agree with that reading and cannot tell it from
    the mean of the epochs' spans: the hierarchical RNN on TensorFlow, "14min 55s ± 803 ms" for 5 epochs
    (keras_mxnet_code/.ipynb_checkpoints/keras_perf_test_mnist_hier_rnn_mxnet-checkpoint.ipynb:368), gives the post's
    179 s/epoch, and so does 895 s less the 1.6 s its two runs differ by. The call holds Keras 2.0.8's building of
    the train and test functions (inside ``fit``: keras/engine/training.py@2.0.8:1575, 1582), every batch's feed to
    the device, every epoch and each one's validation.

    Args:
        epoch_s: each epoch's span, from its begin to after its validation (``EpochClock``), the first included
            (on Keras 3, tf-keras and plain JAX it holds the tracing, and XLA compilation where XLA is on, which run
            lazily at the first step).
        call_s: wall time of the whole training call between device barriers: Keras' ``model.fit``, its own setup
            before the first epoch included; the PyTorch and JAX loops from the first epoch's start to after the
            last validation, their model, optimizer and data placed before it.

    Returns:
        ``fit_call_s`` (s), ``fit_call_s_per_epoch`` (the 2017 metric: ``call_s`` over the epochs run, s/epoch),
        ``fit_epoch_s`` (the spans, a list) and ``fit_epoch_s_mean`` (their mean, s).

    Raises:
        ValueError: no epoch, or a negative or non-finite time.
    """
    times = [float(t) for t in epoch_s] + [float(call_s)]
    if not epoch_s or not all(math.isfinite(t) and t >= 0 for t in times):
        raise ValueError(f"fit_metrics needs at least one epoch and finite times >= 0, got {list(epoch_s)!r}, "
                         f"call {call_s!r} s")
    return {"fit_call_s": float(call_s), "fit_call_s_per_epoch": float(call_s) / len(epoch_s),
            "fit_epoch_s": [float(t) for t in epoch_s], "fit_epoch_s_mean": float(np.mean(epoch_s))}


def time_calls(call: Callable[[], Any], steps: int, timer: EpochTimer,
               rehearse: Callable[[], object] | None = None) -> Any:
    """Time ``steps + 1`` calls of ``call``: the first (build/compile) as the timer's first epoch, the others
    as its second, so ``timer.summary`` reports the first apart and its statistics cover steps 2..N.
    ``rehearse`` (None: none) runs between them, in no timed interval (``EpochTimer.settle``: its seconds are the
    summary's ``graph_warmup_s``): what a compiler does at a graph's second call
    (``bench.models.engines.torch.settle``). Returns the last call's result.

    Each call's result is held until the barrier after it has run: JAX's barrier waits on ``jax.live_arrays()``,
    which a dropped result is not in, so a first call whose output were discarded would end its epoch before its
    work had (its compile and run would land in step 2)."""
    timer.begin_epoch()
    first = call()
    timer.end_step()
    if rehearse is not None:
        timer.settle(rehearse, counted=False)
    timer.begin_epoch()
    del first
    out = None
    for _ in range(steps):
        out = call()
        timer.end_step()
    return out


def time_free_running(epoch: Callable[[], object], barrier: Callable[[], object], epochs: int) -> dict[str, float]:
    """A free-running loop's times (s): ``epoch()`` once between barriers (it compiles), then the other
    ``epochs - 1`` as one block between barriers, with no hook or clock read inside (``bench.run.fidelity``'s
    reference for the PyTorch and JAX hand loops). Returns ``first_epoch_s`` and ``steady_s``."""
    barrier()
    t0 = clock()
    epoch()
    barrier()
    t1 = clock()
    for _ in range(epochs - 1):
        epoch()
    barrier()
    return {"first_epoch_s": t1 - t0, "steady_s": clock() - t1}
