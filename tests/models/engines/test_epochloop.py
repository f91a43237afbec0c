"""The epoch loop the PyTorch and JAX epoch engines share (``bench.models.engines.epochloop``), with framework-free
callables: where the barriers, read-backs, validation and the telemetry's stop fall, and what the history holds."""

from __future__ import annotations

import pytest

from bench.instruments.timing import Cadence
from bench.models.engines.epochloop import EpochSteps, LoopTiming, Settle, train_epochs


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


@pytest.mark.parametrize("sync", ["epoch", "step"])
@pytest.mark.parametrize("epochs", [1, 3])
def test_settle_runs_in_the_first_epoch_its_steps_part_counted_as_training_where_a_later_epoch_follows(
        monkeypatch, epochs, sync):
    """``EpochSteps.settle`` (CUDA graph recording under torch.compile): its ``steps`` after the first epoch's last
    step, before the barrier that closes its training time, counted there (``first_epoch_s``, ``total_train_s``)
    and in no step; its ``validation`` after the first validation, in that epoch's span only; both in
    ``graph_warmup_s``; neither with one epoch (no field then). A fake clock: the steps part takes 100 s, the
    validation part 1000 s, nothing else any time."""
    import dataclasses

    from bench.instruments import timing
    from bench.models.engines import epochloop

    now = [0.0]
    monkeypatch.setattr(timing, "clock", lambda: now[0])
    monkeypatch.setattr(epochloop, "clock", lambda: now[0])

    def part(name: str, seconds: float):
        return lambda: (log.add(name), now.__setitem__(0, now[0] + seconds))

    log = Log()
    steps = dataclasses.replace(log.steps([1]), settle=Settle(part("settle steps", 100), part("settle val", 1000)))
    metrics, _ = train_epochs(steps, log.timing(sync), epochs, 1, 1)
    assert log.events.count("settle steps") == log.events.count("settle val") == (epochs > 1)
    if epochs == 1:
        assert metrics.first_epoch_s == 0 and "graph_warmup_s" not in metrics.model_fields_set
        return
    i, j = log.events.index("settle steps"), log.events.index("settle val")
    # the last step's interval closed (a barrier), the settling, its barrier, the epoch's end (the window's barrier)
    before = ["step1", "read", "barrier"] if sync == "step" else ["step1", "barrier"]
    assert log.events[i - len(before):i + 3] == [*before, "settle steps", "barrier", "barrier"]
    assert log.events[j - 2:j + 2] == ["validate", "barrier", "settle val", "barrier"]
    assert log.events.index("end") < j < log.events.index("step1", i)
    assert metrics.first_epoch_s == metrics.total_train_s == 100
    assert metrics.epoch_s == [100, 0, 0] and metrics.steady_epoch_s == 0
    assert metrics.fit_epoch_s == [1100, 0, 0] and metrics.graph_warmup_s == 1100
    assert metrics.steps_per_epoch == 1 and (metrics.first_step_s == 0 if sync == "step" else True)
