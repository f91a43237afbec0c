"""The epoch loop the hand-written epoch engines share (PyTorch's and JAX's): the timing skeleton written once.

Each engine gives its framework's part as an ``EpochSteps`` (the batches, one training step, the running sums on the
device, reading them back, validation); ``train_epochs`` runs every epoch between the timer's barriers, reads the
training loss and accuracy back (after every step under ``sync=step``, else once after the epoch's timed steps),
validates after the timed window, settles the compiled graphs in the first epoch (``EpochSteps.settle``), keeps the
per-epoch history, and stops the telemetry window right after its last barrier. Keras' engine times its
own ``fit`` through callbacks and does not use it; all three epoch engines open with ``checked_augment``, the
``augment`` knob's check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.core.knobs import augment_in_effect, augmentation_problem
from bench.instruments.timing import Cadence, EpochClock, EpochTimer, clock, fit_metrics
from bench.models.engines import Unsupported
from bench.results.schema import Metrics

if TYPE_CHECKING:
    from bench.core.settings import Settings
    from bench.models.workloads import Workload


def checked_augment(settings: Settings, workload: Workload) -> bool:
    """Whether a cell trains on ``workload``'s source augmentation (``bench.core.knobs.augment_in_effect``): the
    source has one and ``augment`` is unset or true.

    Raises:
        Unsupported: ``augment`` the cell cannot run (``bench.core.knobs.augmentation_problem``): asked for where the
            source has none, or with another data pipeline.
    """
    has_augmentation = workload.augmentation is not None
    reason = augmentation_problem(settings, workload.name, has_augmentation)
    if reason:
        raise Unsupported(reason)
    return augment_in_effect(settings, has_augmentation)


@dataclass(frozen=True)
class EpochSteps:
    """A framework's part of the epoch loop (every callable runs inside the cell's process).

    Attributes:
        batches: ``batches()``, one epoch's training batches, each handed to ``step`` as it comes.
        begin: called once an epoch's timed window opened, before its first step: the model in training mode
            where the framework has one, and returns the epoch's running sums, a device array of 2 zeros.
        step: ``step(batch)``, one training step (forward, backward, update) on a batch; returns the batch's device
            pair (summed loss, correct predictions), float32.
        accumulate: ``accumulate(sums, pair)`` -> the running sums with ``pair`` added (on the device, no read-back).
        to_host: ``to_host(pair)`` -> the pair read back as two Python floats (a device synchronisation).
        evaluate: ``evaluate()`` -> (mean validation loss, validation accuracy) of the model as trained so far.
        settle: a ``Settle``, run once where a later epoch follows: the work a compiler does at a later call of a
            graph than its first (CUDA graph recording), so that none of it lands in a later epoch. None: nothing
            to settle.
    """

    batches: Callable[[], Iterable[Any]]
    begin: Callable[[], Any]
    step: Callable[[Any], Any]
    accumulate: Callable[[Any, Any], Any]
    to_host: Callable[[Any], Sequence[float]]
    evaluate: Callable[[], tuple[float, float]]
    settle: Settle | None = None


@dataclass(frozen=True)
class Settle:
    """What ``EpochSteps.settle`` runs in the first epoch, each through ``EpochTimer.settle`` (its seconds are the
    record's ``metrics.graph_warmup_s``); both must leave the model, optimizer and random streams as they found them.

    Attributes:
        steps: ``steps()``, after the first epoch's training steps, before its window closes: counted in its
            training time (``first_epoch_s``, ``total_train_s``: compilation) and in no step's.
        validation: ``validation()``, after the first epoch's validation: in its span (``fit_epoch_s[0]``,
            ``fit_call_s``), as the validation it prepares, outside every timed interval.
    """

    steps: Callable[[], None]
    validation: Callable[[], None]


@dataclass(frozen=True)
class LoopTiming:
    """How the loop is timed.

    Attributes:
        barrier: the device barrier before every clock read (``bench.models.engines.frameworks.make_barrier``).
        ready: called once before the clock starts: every upload done (often ``barrier``).
        cadence: how often the timer synchronises (``settings.sync``, ``bench.instruments.timing.Cadence``).
        telemetry: the cell's telemetry window (``Telemetry`` / ``NullTelemetry`` / None), stopped when the loop ends.
        close: called when the loop ends, before the telemetry stops (a data loader's workers); None: nothing.
    """

    barrier: Callable[[], None]
    ready: Callable[[], None]
    cadence: Cadence
    telemetry: Any = None
    close: Callable[[], None] | None = None


def train_epochs(steps: EpochSteps, timing: LoopTiming, epochs: int, batch_size: int,
                 trained: int) -> tuple[Metrics, dict[str, list[float]]]:
    """Train ``epochs`` epochs of ``steps``, timed as ``timing`` says.

    ``batch_size``: examples per step; ``trained``: examples one epoch trains on (the loss and accuracy divide by
    it). ``metrics`` holds the timer's summary (``EpochTimer.summary``) and ``fit_metrics``: the whole loop, first
    barrier to the one after the last validation (``fit_call_s``; over the epochs, the 2017 comparison's
    ``fit_call_s_per_epoch``), and each epoch from its begin to after its validation (``EpochClock``,
    ``fit_epoch_s``). ``steps.settle`` runs in the first epoch where a later one follows (``Settle``).

    Returns:
        (``Metrics``, the history: per epoch ``loss``, ``accuracy``, ``val_loss``, ``val_accuracy``).

    Raises:
        Whatever a step, the batches or the evaluation raised (the telemetry is stopped first).
    """
    timer = EpochTimer(timing.barrier, timing.telemetry, timing.cadence)
    epoch_clock = EpochClock(timing.barrier)
    hist: dict[str, list[float]] = {"accuracy": [], "loss": [], "val_accuracy": [], "val_loss": []}
    try:
        timing.ready()
        start = clock()
        for epoch in range(epochs):
            settle = steps.settle if epoch == 0 and epochs > 1 else None  # only for a later epoch's sake
            epoch_clock.begin()
            timer.begin_epoch()
            loss_sum, correct = _train_one_epoch(steps, timer, timing.cadence.every == 1, settle)
            val_loss, val_acc = steps.evaluate()
            if settle is not None:
                timer.settle(settle.validation, counted=False)
            hist["loss"].append(loss_sum / trained)
            hist["accuracy"].append(correct / trained)
            hist["val_loss"].append(val_loss)
            hist["val_accuracy"].append(val_acc)
            epoch_clock.end()
        timing.barrier()
        fit_call_s = clock() - start
    finally:
        if timing.close is not None:
            timing.close()
        if timing.telemetry:
            timing.telemetry.stop()
    return Metrics(**timer.summary(batch_size, trained), **fit_metrics(epoch_clock.epoch_s, fit_call_s)), hist


def _train_one_epoch(steps: EpochSteps, timer: EpochTimer, read_every_step: bool,
                     settle: Settle | None = None) -> tuple[float, int]:
    """One epoch's timed steps, then (summed loss, correct predictions) read back. ``read_every_step`` (``sync=step``)
    reads each step's pair back inside the window, as Keras does for a batch-end callback's logs; otherwise the
    pairs add up on the device and are read once, after the epoch's window closed. ``settle``: its ``steps`` run
    after the last step, inside the epoch's training time (``Settle``)."""
    sums = steps.begin()
    loss_sum, correct = 0.0, 0
    for batch in steps.batches():
        pair = steps.step(batch)
        if read_every_step:
            batch_loss, batch_correct = steps.to_host(pair)
            loss_sum += batch_loss
            correct += int(batch_correct)
        else:
            sums = steps.accumulate(sums, pair)
        timer.end_step()
    if settle is not None:
        timer.settle(settle.steps, counted=True)
    timer.end_epoch()
    if not read_every_step:
        epoch_loss, epoch_correct = steps.to_host(sums)
        loss_sum, correct = epoch_loss, int(epoch_correct)
    return loss_sum, correct
