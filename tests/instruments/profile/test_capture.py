"""The profiled steps and the window around them (``bench.instruments.profile.rerun``, ``window``, ``capture``): the
warm-up runs outside the window, the window opens after a barrier and closes after one, a profile that fails
leaves a reason, not a failed cell."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from bench.instruments import profile
from bench.instruments.profile import rerun
from bench.instruments.profile.spans import DEVICE, MARK, OP, Span
from bench.instruments.profile.summary import WINDOW
from bench.instruments.profile.window import Window, profiler_for
from bench.instruments.profile.xla import COMMAND_BUFFERS_OFF, command_buffers_off


class FakeProfiler:
    """Records the calls made to it in ``log``; its trace: the window mark and one op per profiled step."""

    name, activities = "fake.profiler", ["cpu"]

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self):
        self.log.append("profiler.start")

    def begin(self):
        self.log.append("window.begin")

    def end(self):
        self.log.append("window.end")

    def stop(self):
        self.log.append("profiler.stop")

    def collect(self, base: Path):
        steps = self.log.count("step") - rerun.WARMUP
        spans = [Span(WINDOW, 0.0, 100.0 * steps, "1:1", MARK)]
        spans += [Span("aten::mm", 100.0 * k, 60.0, "1:1", OP) for k in range(steps)]
        return spans, {"trace": base.name + ".trace.json.gz", "trace_bytes": 1}


def test_a_loop_warms_up_outside_the_window_and_cycles_its_epochs():
    log: list[str] = []
    window = Window(FakeProfiler(log), lambda: log.append("barrier"))
    epochs = []

    def batches():
        epochs.append(len(epochs))
        return iter([1, 2])  # an epoch of two batches: shorter than the profile

    run = rerun.loop(lambda b: log.append("step"), batches, before=lambda: log.append("train mode"),
                     close=lambda: log.append("close"))
    assert run(window, 3) == rerun.Held(rerun.WARMUP, 3)
    assert log == ["train mode", "step", "profiler.start", "barrier", "window.begin", "step", "step", "step",
                   "barrier", "window.end", "profiler.stop", "close"]
    assert len(epochs) == 2 and window.wall_s is not None and window.wall_s >= 0


def test_a_failing_step_still_closes_the_loader():
    closed = []

    def step(batch):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        rerun.loop(step, lambda: iter([1]), close=lambda: closed.append(True))(Window(FakeProfiler([]), lambda: None),
                                                                              2)
    assert closed == [True]


def test_capture_summarises_the_window(monkeypatch, tmp_path):
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: FakeProfiler(log))
    block = profile.capture(rerun.calls(lambda: log.append("step")), "torch", "cpu", tmp_path / "cell",
                            lambda: None, steps=4)
    assert block["steps"] == 4 and block["warmup_steps"] == rerun.WARMUP and block["profiler"] == "fake.profiler"
    assert block["device_busy_fraction"] == pytest.approx(0.6) and block["categories"]["matmul_conv"] > 0
    assert block["trace"] == "cell.trace.json.gz" and block["cost_s"] >= 0 and "reason" not in block


def test_a_profile_that_fails_says_why_and_stops_its_profiler(monkeypatch, tmp_path):
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: FakeProfiler(log))

    def step():
        if "window.begin" in log:
            raise RuntimeError("the step broke mid-profile")

    block = profile.capture(rerun.calls(step), "torch", "cpu", tmp_path / "cell", lambda: None)
    assert block["reason"] == "RuntimeError: the step broke mid-profile" and "cost_s" in block
    assert log[-2:] == ["window.end", "profiler.stop"]


def test_steps_that_never_close_the_window_are_a_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: FakeProfiler([]))
    block = profile.capture(lambda window, steps: rerun.Held(rerun.WARMUP, steps - 1), "torch", "cpu",
                            tmp_path / "cell", lambda: None)
    assert "before the profile window closed" in block["reason"]
    assert f"it held {profile.STEPS - 1} steps after {rerun.WARMUP}" in block["reason"]


def test_each_framework_has_its_profiler_module_and_nothing_else_does(tmp_path):
    from bench.core.families import FRAMEWORKS

    for backend in FRAMEWORKS:
        assert Path(profile.__file__).with_name(f"{backend}_profiler.py").is_file(), backend
    with pytest.raises(ValueError, match="no profiler"):
        profiler_for("mxnet", "cpu", tmp_path)


class FakeKeras:
    """What ``rerun.window_callback`` needs of Keras: ``keras.callbacks.Callback`` (with ``params`` and ``model``)."""

    class callbacks:  # noqa: N801 - Keras' module name
        class Callback:
            params: dict = {}
            model = None


def test_the_keras_callback_opens_after_the_warm_up_and_closes_as_the_step_after_the_last_begins():
    log: list[str] = []
    window = Window(FakeProfiler(log), lambda: log.append("barrier"))
    cb = rerun.window_callback(FakeKeras, window, 3)
    for batch in range(rerun.WARMUP + 3 + 1):  # the fit's steps_per_epoch (rerun.keras_fit)
        log.append(f"begin {batch}")
        cb.on_train_batch_begin(batch)
    cb.on_train_end()
    assert cb.held == rerun.Held(rerun.WARMUP, 3)
    assert log == ["begin 0", "begin 1", "profiler.start", "barrier", "window.begin", "begin 2", "begin 3",
                   "begin 4", "barrier", "window.end", "profiler.stop"]


def test_the_keras_callback_closes_at_the_end_when_the_data_runs_out_and_counts_executions():
    window = Window(FakeProfiler([]), lambda: None)
    cb = rerun.window_callback(FakeKeras, window, 5, predict=True)
    cb.model = type("Model", (), {"steps_per_execution": 2})()
    for batch in (0, 2):  # two executions of two steps: the window opens at the second
        cb.on_predict_batch_begin(batch)
    cb.on_predict_end()
    assert window.stopped and cb.held == rerun.Held(2, 2)


def test_the_keras_fit_profile_reports_progress_as_the_cell_did():
    """The profile's extra fit gets the cell's ``verbose`` and its progress callbacks (the notebooks' batch-end hook,
    the classic default), beside the window's own: the profiled steps do the per-batch work the timed ones did."""
    seen: dict = {}

    class Model:
        def fit(self, **kw):
            seen.update(kw)

    progress = object()
    run = rerun.keras_fit(FakeKeras, Model(), lambda n: {"x": n}, 0, lambda verbose: contextlib.nullcontext(),
                          [progress])
    run(Window(FakeProfiler([]), lambda: None), 3)
    assert seen["verbose"] == 0 and seen["callbacks"][1:] == [progress]
    assert seen["x"] == seen["steps_per_epoch"] == rerun.WARMUP + 3 + 1


def test_capture_starts_the_profiler_before_the_warm_up_and_opens_the_window_after_it(monkeypatch, tmp_path):
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: FakeProfiler(log))
    profile.capture(rerun.calls(lambda: log.append("step")), "torch", "cpu", tmp_path / "cell", lambda: None, steps=2)
    assert log == ["profiler.start", *["step"] * rerun.WARMUP, "window.begin", "step", "step", "window.end",
                   "profiler.stop"]


def test_capture_caps_the_steps_and_records_the_cap(monkeypatch, tmp_path):
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: FakeProfiler(log))
    block = profile.capture(rerun.calls(lambda: log.append("step")), "torch", "cpu", tmp_path / "cell", lambda: None,
                            steps=10 * profile.MAX_STEPS)
    assert block["steps"] == block["steps_cap"] == profile.MAX_STEPS
    assert log.count("step") == rerun.WARMUP + profile.MAX_STEPS


class QuietGpuProfiler(FakeProfiler):
    """A profiler on a GPU that saw only the host's ops (CUPTI unavailable), and said so."""

    activities = ["cpu", "cuda"]
    execution_differs = "the profiler changed the steps"

    def collect(self, base: Path):
        spans, files = super().collect(base)
        return spans, {**files, "warnings": ["warning: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]}


def test_a_gpu_profile_without_device_activity_is_a_reason_not_a_profile(monkeypatch, tmp_path):
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: QuietGpuProfiler(log))
    block = profile.capture(rerun.calls(lambda: log.append("step")), "torch", "gpu", tmp_path / "cell", lambda: None)
    assert block["reason"].startswith("ValueError: no device activity")
    assert "device_busy_fraction" not in block and "categories" not in block
    assert block["warnings"] == ["warning: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]  # what the profiler said is kept
    assert block["trace"] == "cell.trace.json.gz" and block["execution_differs"] == "the profiler changed the steps"


class LossyGpuProfiler(FakeProfiler):
    """A profiler on a GPU whose trace holds the warm-up's kernel but none of the window's (a filled buffer)."""

    activities = ["cpu", "cuda"]

    def collect(self, base: Path):
        spans, files = super().collect(base)
        return [*spans, Span("volta_sgemm_128x64_nn", -50.0, 20.0, "stream 7", DEVICE)], files


def test_a_gpu_profile_whose_window_lost_its_kernels_is_a_reason_not_zero_busy(monkeypatch, tmp_path):
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: LossyGpuProfiler(log))
    block = profile.capture(rerun.calls(lambda: log.append("step")), "torch", "gpu", tmp_path / "cell", lambda: None)
    assert block["reason"].startswith("ValueError: no device activity inside the profiled window")
    assert "device_busy_fraction" not in block and "host_fraction" not in block


class DifferingProfiler(FakeProfiler):
    """A profiler that says the profiled steps run otherwise (as XLA's command buffers do under one)."""

    execution_differs = "the profiler changed the steps"


@pytest.mark.parametrize(("xla", "said"), [(None, True), (True, True), (False, False)])
def test_a_cell_that_ran_no_xla_is_not_said_to_run_otherwise(monkeypatch, tmp_path, xla, said):
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: DifferingProfiler(log))
    block = profile.capture(rerun.calls(lambda: log.append("step")), "tensorflow", "cpu", tmp_path / "cell",
                            lambda: None, xla=xla)
    assert "reason" not in block
    assert block["execution_differs"] == ("the profiler changed the steps" if said else None)


@pytest.mark.parametrize(("settings", "compiled"), [
    ({"jit_compile": True}, True),  # Keras 3 on TensorFlow with a GPU: jit_compile auto -> True
    ({"jit_compile": False}, False),
    ({"jit_compile": False, "optimizer": {"name": "adam", "jit_compile": True}}, True),  # tf-keras' XLA update
    ({"jit_compile": False, "optimizer": {"name": "adam", "jit_compile": False}}, False),
    ({"optimizer": {"name": "adam"}}, None), ({"jit_compile": "auto"}, None), ({}, None)])
def test_tf_compiled_reads_the_record_as_it_took_effect(settings, compiled):
    from bench.instruments.profile.xla import tf_compiled

    assert tf_compiled(settings) is compiled


def test_the_profilers_warnings_reach_the_block(monkeypatch, tmp_path):
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: QuietGpuProfiler(log))
    block = profile.capture(rerun.calls(lambda: log.append("step")), "torch", "cpu", tmp_path / "cell", lambda: None)
    assert "reason" not in block and block["warnings"] == ["warning: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"]


def test_a_trace_over_the_limit_is_deleted_its_sizes_kept_and_a_warning_says_so(tmp_path):
    (tmp_path / "cell.trace.json.gz").write_bytes(b"x" * 300)
    (tmp_path / "cell.tensorboard").mkdir()
    (tmp_path / "cell.tensorboard" / "host.xplane.pb").write_bytes(b"x" * 300)
    files = {"trace": "cell.trace.json.gz", "trace_bytes": 300, "tensorboard": "cell.tensorboard",
             "tensorboard_bytes": 300, "warnings": ["warning: w"]}
    assert profile.bounded(files, tmp_path, limit=600) == files
    kept = profile.bounded(files, tmp_path, limit=599)
    assert kept["trace"] is None and kept["tensorboard"] is None and kept["trace_bytes"] == 300
    assert kept["warnings"] == ["warning: w", "trace not kept: 600 bytes over the limit of 599 bytes"]
    assert not list(tmp_path.iterdir())


def test_the_profiled_step_is_related_to_the_timed_p50():
    block = profile.relate({"wall_ms": 50.0, "steps": 5}, 4.0)
    assert block["ms_per_step"] == pytest.approx(10.0) and block["slowdown"] == pytest.approx(2.5)
    assert profile.relate({"wall_ms": 50.0, "steps": 5}, None)["slowdown"] is None
    assert profile.relate({"reason": "x"}, 4.0)["ms_per_step"] is None


@pytest.mark.parametrize(("device", "flags", "differs"), [
    ("gpu", "", True),
    ("cpu", "", False),
    ("gpu", "--xla_enable_command_buffers_during_profiling=true", False),
    ("gpu", "--xla_gpu_enable_command_buffer= --xla_dump_to=/tmp", False),
    ("gpu", "--xla_gpu_enable_command_buffer=FUSION,CUBLAS", True),
])
def test_xla_on_a_gpu_runs_its_command_buffers_op_by_op_under_the_profiler(device, flags, differs):
    assert command_buffers_off(device, flags) == (COMMAND_BUFFERS_OFF if differs else None)


class FakeTensorFlow:
    """What ``tensorflow_profiler.Profiler`` reads of TensorFlow at construction (TF runs only in its images)."""

    __version__ = "2.21.0"

    class profiler:  # noqa: N801 - TensorFlow's module name
        class experimental:  # noqa: N801
            ProfilerOptions = dict


@pytest.mark.parametrize(("device", "flags", "differs"), [
    ("gpu", "", True), ("cpu", "", False), ("gpu", "--xla_enable_command_buffers_during_profiling", False)])
def test_tensorflow_on_a_gpu_says_its_xla_clusters_run_op_by_op_under_the_profiler(monkeypatch, tmp_path, device,
                                                                                    flags, differs):
    """TF 2.21's XLA GPU runtime drops command buffers under a profiler as jax's does (libtensorflow_cc.so.2 holds
    the same message and flag), and Keras compiles the TF backend's step with XLA on a GPU."""
    from bench.instruments.profile import tensorflow_profiler

    monkeypatch.setitem(__import__("sys").modules, "tensorflow", FakeTensorFlow)
    monkeypatch.setenv("XLA_FLAGS", flags)
    said = tensorflow_profiler.Profiler(device, tmp_path).execution_differs
    assert (said is not None) == differs
    if differs:
        assert said.startswith(COMMAND_BUFFERS_OFF) and "XLA clusters only" in said


def test_a_keras_calls_data_is_made_before_the_profiler_starts(monkeypatch, tmp_path):
    """Repeating or concatenating the cell's data for the call is neither in the trace nor its cost to the
    profiler: ``capture`` prepares a Keras call before ``Window.arm``."""
    log: list[str] = []
    monkeypatch.setattr(profile, "profiler_for", lambda backend, device, workdir: FakeProfiler(log))
    model = type("Model", (), {"steps_per_execution": 1})()

    def make_data(n):
        log.append(f"data for {n}")
        return list(range(n))

    def call(window, steps, data):
        for k, _ in enumerate(data):
            if k == rerun.WARMUP:
                window.start()
            if k == rerun.WARMUP + steps:
                window.stop()
            log.append("step")
        return rerun.Held(rerun.WARMUP, steps)

    block = profile.capture(rerun.KerasCall(model, call, make_data), "tensorflow", "cpu", tmp_path / "cell",
                            lambda: None, steps=3)
    assert "reason" not in block, block
    assert log[:2] == [f"data for {rerun.WARMUP + 3 + 1}", "profiler.start"]
    assert log.count("data for 5") == 1  # prepared once, used by the call
