"""The epoch loop the PyTorch and JAX epoch engines share (``bench.models.engines.epochloop``), with framework-free
callables: where the barriers, read-backs, validation and the telemetry's stop fall, and what the history holds."""

from __future__ import annotations

import pytest

from bench.instruments.timing import Cadence
from bench.models.engines.epochloop import EpochSteps, LoopTiming, train_epochs


class Log:
    """Records the loop's calls in order; a step's device pair is (loss 1.0, 1 correct) per example of a batch."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def steps(self, batches: list[int], fail_at: int | None = None) -> EpochSteps:
        def step(batch: int) -> list[float]:
            if batch == fail_at:
                raise RuntimeError("step failed")
            self.events.append(f"step{batch}")
            return [float(batch), float(batch)]

        def accumulate(sums: list[float], pair: list[float]) -> list[float]:
            return [a + b for a, b in zip(sums, pair, strict=True)]

        def to_host(pair: list[float]) -> list[float]:
            self.events.append("read")
            return pair

        return EpochSteps(lambda: iter(batches), lambda: self.add("begin", [0.0, 0.0]), step, accumulate, to_host,
                          lambda: self.add("validate", (0.5, 0.25)))

    def add(self, event: str, value=None):
        self.events.append(event)
        return value

    def timing(self, sync: str) -> LoopTiming:
        return LoopTiming(lambda: self.add("barrier"), lambda: self.add("ready"), Cadence.parse(sync), Window(self),
                          lambda: self.add("close"))


class Window:
    def __init__(self, log: Log) -> None:
        self.log = log

    def mark(self) -> None:
        self.log.add("mark")

    def end_epoch(self) -> None:
        self.log.add("end")

    def stop(self) -> None:
        self.log.add("stop")


def test_epoch_cadence_reads_the_sums_back_once_after_the_timed_window():
    log = Log()
    metrics, hist = train_epochs(log.steps([1, 2]), log.timing("epoch"), 2, 2, 3)
    epoch = ["barrier", "barrier", "mark", "begin", "step1", "step2", "barrier", "end", "read", "validate",
             "barrier"]  # EpochClock's begin, the timer's begin, ..., the timer's end, EpochClock's end
    assert log.events == ["ready", *epoch, *epoch, "barrier", "close", "stop"]
    assert hist == {"loss": [1.0, 1.0], "accuracy": [1.0, 1.0], "val_loss": [0.5, 0.5], "val_accuracy": [0.25, 0.25]}
    assert metrics.epochs == 2 and metrics.steps_per_epoch == 2 and metrics.barriers == 4


def test_step_cadence_reads_every_step_back_inside_the_window():
    log = Log()
    _, hist = train_epochs(log.steps([1, 2]), log.timing("step"), 1, 2, 3)
    # the last step's barrier closes its interval; end_epoch's own barrier then closes the energy window
    assert log.events == ["ready", "barrier", "barrier", "mark", "begin", "step1", "read", "barrier", "step2", "read",
                          "barrier", "barrier", "end", "validate", "barrier", "barrier", "close", "stop"]
    assert hist["loss"] == [1.0] and hist["accuracy"] == [1.0]


def test_a_failing_step_still_closes_the_loader_and_stops_the_telemetry():
    log = Log()
    with pytest.raises(RuntimeError, match="step failed"):
        train_epochs(log.steps([1, 2], fail_at=2), log.timing("epoch"), 2, 2, 3)
    assert log.events[-2:] == ["close", "stop"]


def test_checked_augment_refuses_what_cannot_run_and_says_whether_the_cell_augments():
    """The ``augment`` check all three epoch engines open with: refused as ``augmentation_problem`` says, else
    ``augment_in_effect``; Keras' ``check_supported`` answers the same."""
    from bench.core.families.jax import JaxEpochSettings
    from bench.core.families.keras import KerasEpochSettings
    from bench.core.families.torch import TorchEpochSettings
    from bench.core.stacks import STACKS
    from bench.models.engines import Unsupported
    from bench.models.engines.epochloop import checked_augment
    from bench.models.engines.keras.epochs import check_supported
    from bench.models.workloads import Workload, get_workload

    mlp, cnn = get_workload("mnist_mlp"), get_workload("cifar10_cnn")
    assert isinstance(mlp, Workload) and isinstance(cnn, Workload)
    for cls in (TorchEpochSettings, JaxEpochSettings, KerasEpochSettings):
        with pytest.raises(Unsupported, match="augment=true: mnist_mlp's source has no augmentation"):
            checked_augment(cls(augment=True), mlp)
        assert checked_augment(cls(), cnn) is True
        assert checked_augment(cls(augment=False), cnn) is False
        assert checked_augment(cls(), mlp) is False
    with pytest.raises(Unsupported, match="add augment=false"):
        checked_augment(TorchEpochSettings(num_workers=6), cnn)
    keras3_jax = STACKS["keras3-jax"]
    assert check_supported(keras3_jax, cnn, "cpu", KerasEpochSettings()) is True
    assert check_supported(keras3_jax, cnn, "cpu", KerasEpochSettings(augment=False)) is False
    with pytest.raises(Unsupported, match="add augment=false"):
        check_supported(keras3_jax, cnn, "cpu", KerasEpochSettings(data_pipeline="tensors_fit"))


@pytest.mark.parametrize("epochs", [1, 3])
def test_settle_runs_once_after_the_first_validation_inside_its_span_where_a_later_epoch_follows(epochs):
    """``EpochSteps.settle`` (CUDA graph recording under torch.compile) runs after the first epoch's validation,
    before the barrier that ends that epoch's span, outside the timed window; not at all with one epoch."""
    import dataclasses

    log = Log()
    steps = dataclasses.replace(log.steps([1]), settle=lambda: log.add("settle"))
    train_epochs(steps, log.timing("epoch"), epochs, 1, 1)
    assert log.events.count("settle") == (epochs > 1)
    if epochs > 1:
        i = log.events.index("settle")
        # EpochClock's end of epoch 1, then epoch 2: EpochClock's begin, the timer's begin and its window's mark
        assert log.events[i - 1:i + 5] == ["validate", "settle", "barrier", "barrier", "barrier", "mark"]
