import pytest

import bench.timing as timing
from bench.timing import EpochTimer, step_stats_ms


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
    timer.epochs = [[5.0, 0.1, 0.3]]
    s = timer.summary(1, 3)
    assert s["steady_epoch_s"] is None and s["samples_per_s"] is None
    assert s["ms_per_step_mean"] == pytest.approx(200.0)


def test_unknown_backend():
    with pytest.raises(ValueError):
        timing.make_barrier("mxnet", "cpu")
