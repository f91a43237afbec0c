import pytest

import bench.instruments.timing as timing
from bench.instruments.timing import EPOCH, STEP, Cadence, EpochTimer, step_stats_ms
from bench.models.engines import frameworks


def test_step_stats_in_ms():
    s = step_stats_ms([0.001, 0.002, 0.003, 0.004])
    assert s["steps"] == 4
    assert s["ms_per_step_mean"] == pytest.approx(2.5)
    assert s["ms_per_step_p50"] == pytest.approx(2.5)
    assert s["ms_per_step_p90"] == pytest.approx(3.7)
    assert s["ms_per_step_min"] == pytest.approx(1.0)
    assert s["ms_per_step_max"] == pytest.approx(4.0)
    assert s["ms_per_step_std"] == pytest.approx(1.118033988749895)


def test_step_stats_empty():
    s = step_stats_ms([])
    assert s["steps"] == 0 and s["ms_per_step_mean"] is None


def test_epoch_timer_syncs_before_every_clock_read_and_splits_first_epoch(monkeypatch):
    events = []
    t = iter([0.0, 10.0, 11.0,      # epoch 1: begin, step, step (first step 10 s: compile)
              20.0, 21.0, 23.0])    # epoch 2: begin, steps of 1 s and 2 s

    def fake_clock():
        events.append("clock")
        return next(t)

    monkeypatch.setattr(timing, "clock", fake_clock)
    timer = EpochTimer(lambda: events.append("barrier"))
    for _ in range(2):
        timer.begin_epoch()
        timer.end_step()
        timer.end_step()
    assert events == ["barrier", "clock"] * 6
    s = timer.summary(batch_size=4, n_train=8)
    assert s["first_epoch_s"] == pytest.approx(11.0)
    assert s["first_step_s"] == pytest.approx(10.0)
    assert s["steady_epoch_s"] == pytest.approx(3.0)
    assert s["epoch_s"] == pytest.approx([11.0, 3.0])
    assert s["samples_per_s"] == pytest.approx(8 / 3.0)
    assert s["ms_per_step_mean"] == pytest.approx(1500.0)
    assert s["steps"] == 2 and s["epochs"] == 2 and s["steps_per_epoch"] == 2


def test_single_epoch_uses_steps_after_the_first():
    timer = EpochTimer(lambda: None)
    timer.intervals = [[(5.0, 1), (0.1, 1), (0.3, 1)]]
    s = timer.summary(1, 3)
    assert s["steady_epoch_s"] is None and s["samples_per_s"] is None
    assert s["ms_per_step_mean"] == pytest.approx(200.0)


def _run(cadence, steps_per_epoch, epochs=2, window=None, monkeypatch=None, executions=None):
    """Drive a timer as an engine does; returns (timer, events)."""
    events, ticks = [], iter(range(1000))

    def fake_clock():
        events.append("clock")
        return float(next(ticks))

    monkeypatch.setattr(timing, "clock", fake_clock)
    timer = EpochTimer(lambda: events.append("barrier"), window, cadence)
    for _ in range(epochs):
        timer.begin_epoch()
        for k in executions or [1] * steps_per_epoch:
            timer.end_step(k)
        timer.end_epoch()
    return timer, events


@pytest.mark.parametrize("text, per_epoch", [("step", 1 + 10), ("every:4", 1 + 3), ("every:10", 1 + 1),
                                             ("every:64", 1 + 1), ("epoch", 2)])
def test_each_cadence_makes_its_number_of_barriers_and_clock_reads(monkeypatch, text, per_epoch):
    timer, events = _run(Cadence.parse(text), 10, epochs=3, monkeypatch=monkeypatch)
    assert events == ["barrier", "clock"] * (3 * per_epoch)  # a barrier before every clock read
    s = timer.summary(batch_size=2, n_train=20)
    assert s["barriers"] == s["clock_reads"] == 3 * per_epoch
    assert s["sync"] == text and s["steps_per_epoch"] == 10 and s["steps"] == 20
    # the fake clock ticks once per read: an epoch lasts as many ticks as it has intervals
    assert s["epoch_s"] == [per_epoch - 1] * 3
    assert s["ms_per_step_mean"] == pytest.approx(1000.0 * (per_epoch - 1) / 10)


def test_window_cadence_reports_spread_over_windows_and_keeps_the_partial_one(monkeypatch):
    timer, _ = _run(Cadence.parse("every:4"), 10, epochs=2, monkeypatch=monkeypatch)
    assert [k for _, k in timer.intervals[1]] == [4, 4, 2]
    s = timer.summary(2, 20)
    assert s["ms_per_step_basis"] == "window" and s["executions"] == 3
    assert s["ms_per_step_max"] == pytest.approx(500.0)  # the 2-step window took 1 s
    assert s["first_step_s"] is None


def test_epoch_cadence_spreads_over_steady_epochs_and_needs_two(monkeypatch):
    timer, _ = _run(EPOCH, 5, epochs=3, monkeypatch=monkeypatch)
    s = timer.summary(1, 5)
    assert s["ms_per_step_basis"] == "epoch" and s["executions"] == 2 and s["ms_per_step_p50"] is not None
    timer, _ = _run(EPOCH, 5, epochs=2, monkeypatch=monkeypatch)
    s = timer.summary(1, 5)
    assert s["executions"] == 1 and s["ms_per_step_p50"] is None and s["ms_per_step_mean"] == pytest.approx(200.0)


def test_epoch_cadence_takes_the_step_count_from_the_caller(monkeypatch):
    """Keras without batch hooks: the callback only knows the epoch's steps at its end."""
    events = []
    monkeypatch.setattr(timing, "clock", lambda: events.append("clock") or 0.0)
    timer = EpochTimer(lambda: events.append("barrier"), cadence=EPOCH)
    timer.begin_epoch()
    timer.end_epoch(7)
    timer.end_epoch(7)  # validation's hook, then epoch end: closed once
    assert timer.intervals == [[(0.0, 7)]] and events == ["barrier", "clock"] * 2


def test_energy_window_closes_after_the_last_timed_step_under_every_cadence(monkeypatch):
    class Window:
        def __init__(self, log):
            self.log = log

        def mark(self):
            self.log.append("mark")

        def end_epoch(self):
            self.log.append("end")

    for text in ("step", "every:3", "epoch"):
        log: list[str] = []
        window = Window(log)
        _, events = _run(Cadence.parse(text), 5, epochs=1, window=window, monkeypatch=monkeypatch)
        assert log == ["mark", "end"]
    # step cadence: the last step's clock read closes the steps, then one barrier before the window ends
    timer, events = _run(STEP, 2, epochs=1, window=Window([]), monkeypatch=monkeypatch)
    assert events == ["barrier", "clock"] * 3 + ["barrier"]


def test_cadence_syntax():
    assert [str(Cadence.parse(t)) for t in ("epoch", "step", "every:1", "every:8")] == [
        "epoch", "step", "step", "every:8"]
    for bad in ("every", "every:0", "every:-2", "steps", "", "every:x"):
        with pytest.raises(ValueError, match="every:N"):
            Cadence.parse(bad)
    assert not Cadence.accepts(3)


def test_unknown_backend():
    with pytest.raises(ValueError):
        frameworks.make_barrier("mxnet", "cpu")



def test_a_keras_predict_closes_its_timed_window_before_predict_returns():
    """The audit: without an on_predict_end hook the steady window (and the energy in it) ran on to the engine's
    telemetry.stop(), past Keras joining every batch's outputs on the host."""
    pytest.importorskip("keras")
    import keras
    import numpy as np

    from bench.models.engines.keras.runtime import make_timing_callback

    events = []

    class Window:
        def mark(self):
            events.append("mark")

        def end_epoch(self):
            events.append("end")

    timer = EpochTimer(lambda: None, Window(), STEP)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.predict(np.zeros((12, 3), np.float32), batch_size=4, verbose=0,
                  callbacks=[make_timing_callback(keras, timer, split_first=True)])
    events.append("predict returned")
    # the first step (build + compile) ends at the next mark (the telemetry protocol), steps 2..3 at predict's end
    assert events == ["mark", "mark", "end", "predict returned"]
    assert [k for _, k in timer.intervals[1]] == [1, 1]


@pytest.mark.parametrize("cadence", [STEP, EPOCH])
def test_time_calls_holds_each_result_until_the_barrier_after_it(cadence):
    """The JAX barrier blocks on ``jax.live_arrays()``: the first (compiling) call's result must still be alive,
    and so in that list, when the barrier that ends its epoch runs, under every cadence."""
    jax = pytest.importorskip("jax")
    import weakref

    import jax.numpy as jnp

    real = frameworks.framework("jax").barrier("cpu")
    a = jnp.ones((256, 256))
    mm = jax.jit(lambda x: x @ x)
    results: list[weakref.ref] = []
    held: list[bool] = []

    def call():
        out = mm(a)
        results.append(weakref.ref(out))
        return out

    def barrier():
        if results:  # the barrier after a call: is the latest result among the arrays it waits on?
            latest = results[-1]()
            held.append(latest is not None and any(x is latest for x in jax.live_arrays()))
        real()

    timing.time_calls(call, 3, EpochTimer(barrier, cadence=cadence))
    assert held and all(held), held


def test_first_step_s_is_null_when_the_first_timed_call_ran_several_steps(monkeypatch):
    """Keras with steps_per_execution > 1 under sync=step: its hook ends one call of several steps (the tuning
    study's 512, capped at a 4-step smoke epoch: 4). first_step_s was that call's time over its steps, compilation
    spread over 4 steps, and called "the first step alone"; there is no first step timed alone."""
    timer, _ = _run(STEP, 4, epochs=2, monkeypatch=monkeypatch, executions=[4])
    s = timer.summary(batch_size=8, n_train=32)
    assert s["first_step_s"] is None
    assert s["ms_per_step_basis"] == "execution" and s["executions"] == 1 and s["steps"] == 4
    one_step, _ = _run(STEP, 4, epochs=2, monkeypatch=monkeypatch)  # one step per call: its first step is timed
    assert one_step.summary(batch_size=8, n_train=32)["first_step_s"] == pytest.approx(1.0)
