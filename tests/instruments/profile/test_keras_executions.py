"""A Keras profile with ``steps_per_execution`` > 1 (``bench.instruments.profile.rerun.keras_fit``): Keras calls the
batch hooks once per call, so the profiled fit runs whole calls, each the size of the timed fit's, and the record says
what ran."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bench.instruments.profile import rerun

#: A profile window that logs its edges (what ``keras_fit`` needs of ``bench.instruments.profile.window.Window``).
_WINDOW = """
class Window:
    started = stopped = False
    @property
    def open(self): return self.started and not self.stopped
    def start(self): self.started = True
    def stop(self): self.stopped = True
"""

#: One more fit of a small Keras 3 model on JAX (CPU) per steps_per_execution, with a window that logs its edges and
#: a callback that logs the batch-begin hooks; prints what ran as JSON.
_FIT = """
import contextlib, json, sys
import numpy as np, keras
from bench.instruments.profile.rerun import keras_fit
""" + _WINDOW + """
class Begins(keras.callbacks.Callback):
    seen = ()
    def on_train_batch_begin(self, batch, logs=None): self.seen = (*self.seen, batch)

for spe in json.loads(sys.argv[1]):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse", steps_per_execution=spe)
    data = lambda n: {"x": np.zeros((8 * n, 4), "float32"), "y": np.zeros((8 * n, 2), "float32"), "batch_size": 8}
    begins, window = Begins(), Window()
    held = keras_fit(keras, model, data, 0, lambda v: contextlib.nullcontext(), [begins])(window, 5)
    print("RESULT " + json.dumps({"spe": spe, "held": list(held), "closed": window.stopped,
                                  "ran": int(model.optimizer.iterations.numpy()), "begins": list(begins.seen)}))
"""

#: The cell's data as the engine hands it to fit, an epoch of 2 batches, fewer than the profile's call runs: NumPy
#: arrays (two inputs) and a tf.data pipeline, each through ``with_batches``; prints what ran as JSON.
_FEW = """
import contextlib, json
import numpy as np, keras, tensorflow as tf
from bench.models.engines.keras.data import with_batches
from bench.instruments.profile.rerun import keras_fit
""" + _WINDOW + """
x = [np.zeros((16, 4), "float32"), np.ones((16, 4), "float32")]
y = np.zeros((16, 2), "float32")
forms = {"arrays": {"x": x, "y": y, "batch_size": 8, "shuffle": True},
         "tf.data": {"x": tf.data.Dataset.from_tensor_slices((tuple(x), y)).batch(8)}}
for form, kw in forms.items():
    for spe in (1, 4):
        a, b = keras.Input((4,)), keras.Input((4,))
        model = keras.Model([a, b], keras.layers.Dense(2)(keras.layers.add([a, b])))
        model.compile("sgd", "mse", steps_per_execution=spe)
        window = Window()
        held = keras_fit(keras, model, lambda n: with_batches(keras, kw, n), 0, lambda v: contextlib.nullcontext())(
            window, 5)
        print("RESULT " + json.dumps({"form": form, "spe": spe, "held": list(held), "closed": window.stopped,
                                      "ran": int(model.optimizer.iterations.numpy())}))
"""


@pytest.mark.parametrize(("per", "window", "batches"), [(1, 5, 7), (2, 4, 8), (3, 3, 9), (16, 16, 48)])
def test_a_profiled_keras_call_runs_whole_executions(per, window, batches):
    assert rerun.executions(per, 5) == (window, batches)


def test_keras3_calls_the_hook_per_execution_and_the_record_says_what_ran():
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", _FIT, json.dumps([1, 2, 512])], env=env, capture_output=True,
                          text=True, timeout=300)
    got = {r["spe"]: r for r in (json.loads(ln[7:]) for ln in done.stdout.splitlines() if ln.startswith("RESULT "))}
    assert sorted(got) == [1, 2, 512], done.stderr[-2000:]
    assert got[1]["held"] == [rerun.WARMUP, 5] and got[1]["ran"] == rerun.WARMUP + 5 + 1
    assert got[2]["held"] == [2, 4] and got[2]["begins"] == [0, 2, 4, 6] and got[2]["ran"] == 8  # not 1 and 6
    # the tuning study's value: one execution of warm-up, one inside the window, one whose begin closes it
    assert got[512]["held"] == [512, 512] and got[512]["closed"] and got[512]["begins"] == [0, 512, 1024]


def test_a_cell_whose_epoch_is_shorter_than_the_profile_still_closes_its_window():
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", _FEW], env=env, capture_output=True, text=True, timeout=300)
    got = {(r["form"], r["spe"]): r for r in (json.loads(ln[7:]) for ln in done.stdout.splitlines()
                                               if ln.startswith("RESULT "))}
    assert len(got) == 4, done.stderr[-2000:]
    for form in ("arrays", "tf.data"):  # 2 batches an epoch; the call runs 7 (spe 1) and 12 (spe 4)
        assert got[form, 1]["closed"] and got[form, 1]["held"] == [rerun.WARMUP, 5] and got[form, 1]["ran"] == 7
        assert got[form, 4]["closed"] and got[form, 4]["held"] == [4, 4] and got[form, 4]["ran"] == 12


def test_with_batches_repeats_only_what_is_short():
    from bench.models.engines.keras.data import with_batches

    x, y = [np.arange(16.0), np.arange(16.0)], np.arange(16)
    kw = with_batches(None, {"x": x, "y": y, "batch_size": 8, "shuffle": True}, 5)  # 40 examples: 3 copies
    assert [len(a) for a in kw["x"]] == [48, 48] and len(kw["y"]) == 48 and kw["shuffle"] is True
    assert (kw["y"][16:32] == y).all()
    same = {"x": x[0], "y": y, "batch_size": 8}
    assert with_batches(None, same, 2) is same  # an epoch that holds the call's batches is handed on as it is

    class Pipeline:
        def repeat(self):
            return "repeated"

    assert with_batches(None, {"x": Pipeline()}, 100) == {"x": "repeated"}


def test_tf_keras_steps_per_execution_is_a_variable():
    class Variable:
        def __int__(self):
            return 4

    assert rerun.per_execution(type("TfKerasModel", (), {"_steps_per_execution": Variable()})()) == 4
    assert rerun.per_execution(type("Keras3Model", (), {"steps_per_execution": 2})()) == 2
    assert rerun.per_execution(object()) == 1


def test_a_profiled_call_counts_its_steps():
    spe512 = type("Model", (), {"steps_per_execution": 512})()
    call = rerun.KerasCall(spe512, lambda window, steps, data: rerun.Held(512, 512), lambda n: None)
    assert rerun.batches(call, 5) == 3 * 512
    assert rerun.batches(rerun.loop(lambda b: None, lambda: iter([1])), 5) == rerun.WARMUP + 5


def test_a_profiled_call_runs_calls_of_the_timed_size_on_the_cells_own_epoch_where_keras_ended_them_there():
    """A timed fit whose calls Keras ended at the epoch's 4 steps (steps_per_execution 512): the profile's call runs
    3 calls of 4 steps on the cell's epoch as it is (nothing repeated); an epoch of 512 steps or more: 3 x 512 on
    data made for them, as before."""
    spe512 = type("Model", (), {"steps_per_execution": 512})()
    epoch, made, given = {"x": "the cell's epoch"}, [], []

    def call(window, steps, data):
        given.append(data)
        return rerun.Held(4, 4)

    short = rerun.KerasCall(spe512, call, lambda n: made.append(n), rerun.TimedCalls(4, epoch))
    assert rerun.batches(short, 5) == 12 and rerun.call_steps(spe512, short.timed) == (4, True)
    assert short(None, 5) == rerun.Held(4, 4) and given == [epoch] and made == []
    long = rerun.KerasCall(spe512, call, lambda n: made.append(n), rerun.TimedCalls(512, epoch))
    assert rerun.batches(long, 5) == 3 * 512 and rerun.call_steps(spe512, long.timed) == (512, False)
    long(None, 5)
    assert made == [3 * 512]


@pytest.mark.parametrize(("p50_ms", "taken"), [(65.0, True), (848.0, False), (None, True)])
def test_a_profile_too_long_for_the_cells_limit_is_not_taken(p50_ms, taken):
    """A Keras fit of 512-step calls (steps_per_execution 512 on an epoch of 512 steps or more) on a CPU: 3 x 512
    steps at 65 ms fit in half of a 600 s limit, at 848 ms (mixed_float16 emulated) they do not."""
    from bench.results.cell import Cell
    from bench.results.record import new_record
    from bench.results.schema import Record
    from bench.run import worker

    cell = Cell(stack="keras3-jax", suite="tuning", workload="mnist_cnn_tuning", task="fit", size="smoke",
                device="cpu", timeout_s=600.0)
    rec = Record.model_validate(new_record(cell), strict=True)
    rec.metrics.ms_per_step_p50 = p50_ms
    spe512 = rerun.KerasCall(type("Model", (), {"steps_per_execution": 512})(), lambda w, s, d: rerun.Held(0, 0),
                             lambda n: None)
    why = worker.too_long(spe512, rec, cell, spent_s=20.0)
    assert (why is None) is taken
    late = worker.too_long(spe512, rec, cell, spent_s=500.0)  # 100 s left: even 65 ms x 1536 is over half
    assert (late is None) is (p50_ms is None)
    if not taken:
        assert why == ("not taken: its call runs 1536 steps, at least 1303 s at the timed p50 of 848.0 ms/step, "
                       "over half the 580 s left of the cell's 600 s limit")


#: A tf.data epoch of 8, 8 and 4 examples, and one of a single short batch, through ``with_batches``: the batch sizes
#: the profiled call would take, as JSON.
_SHORT_END = """
import json
import numpy as np, tensorflow as tf
from bench.models.engines.keras.data import with_batches
x, y = np.arange(20.0).reshape(20, 1), np.arange(20)
short_end = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
one_short = tf.data.Dataset.from_tensor_slices((x[:5], y[:5])).batch(8)
sizes = lambda kw, n: [int(b[0].shape[0]) for b in kw["x"].take(n)]
print("RESULT " + json.dumps({"filtered": sizes(with_batches(None, {"x": short_end}, 6, batch_size=8), 6),
                              "unknown_batch": sizes(with_batches(None, {"x": short_end}, 6), 4),
                              "one_short": sizes(with_batches(None, {"x": one_short}, 3, batch_size=8), 3)}))
"""


def test_a_repeated_tf_data_epoch_leaves_its_short_last_batch_out_of_the_profiled_steps():
    if importlib.util.find_spec("tensorflow") is None:  # run in its own process: beside torch, TensorFlow can crash
        pytest.skip("no tensorflow")
    done = subprocess.run([sys.executable, "-c", _SHORT_END], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"})
    got = next((json.loads(ln[7:]) for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert got is not None, done.stderr[-2000:]
    assert got["filtered"] == [8] * 6
    assert got["unknown_batch"] == [8, 8, 4, 8]  # no batch size given: the pipeline repeated as it is
    assert got["one_short"] == [5] * 3  # the cell's steps were all this batch: kept


class _NoLogs(dict):
    """Logs that fail when read: a callback that reads nothing never touches them."""

    def __getitem__(self, key):
        raise AssertionError("the window read the logs")

    get = items = keys = values = __iter__ = __len__ = __getitem__  # type: ignore[assignment]


def test_the_profile_window_reads_no_logs_and_tells_tf_keras_so():
    """tf-keras converts every call's logs to NumPy, a device sync, for a callback implementing a batch hook without
    ``_supports_tf_logs`` (tf_keras/src/callbacks.py@2.21.0:242-248, 292-300; its ``Callback.__init__`` sets it
    False, line 693): the window, which reads no logs, must set it, or a ``progress=none`` profile syncs every call
    that its timed fit did not. The old window left it False."""
    import types

    class TfKerasCallback:  # tf-keras' base as far as the flag goes
        def __init__(self):
            self.model, self._supports_tf_logs = None, False

    keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=TfKerasCallback))
    window = types.SimpleNamespace(open=False, start=lambda: None, stop=lambda: None)
    cb = rerun.window_callback(keras, window, 2, per=1)
    assert cb._supports_tf_logs is True
    cb.on_epoch_begin(0, _NoLogs())
    for batch in range(4):
        cb.on_train_batch_begin(batch, _NoLogs())
    cb.on_train_end(_NoLogs())


#: tf-keras' own CallbackList over the profile's window (the progress=none profile: no other callback), handed one
#: call's logs as tensors: whether it converts them (prints RESULT and the type the hooks get).
_TF_KERAS_LOGS = """
import types
import tensorflow as tf, tf_keras as keras
from bench.instruments.profile.rerun import window_callback
window = types.SimpleNamespace(open=False, start=lambda: None, stop=lambda: None)
cbs = keras.callbacks.CallbackList([window_callback(keras, window, 2, per=1)], add_history=True)
print("RESULT", type(cbs._process_logs({"loss": tf.constant(1.0)}, is_batch_hook=True)["loss"]).__name__)
"""


def test_tf_keras_hands_the_profile_windows_batch_hooks_its_tensors_unconverted():
    if importlib.util.find_spec("tf_keras") is None:
        pytest.skip("no tf_keras (the keras2-tf image has it)")
    done = subprocess.run([sys.executable, "-c", _TF_KERAS_LOGS], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_USE_LEGACY_KERAS": "1", "CUDA_VISIBLE_DEVICES": ""})
    got = next((ln.split()[1] for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert got == "EagerTensor", done.stderr[-2000:]  # converted: float (sync_to_numpy_or_python_type)


@pytest.mark.parametrize(("spe", "note"), [(3, True), (4, False), (8, False), (512, False)])
def test_a_profile_that_left_out_the_timed_epochs_shorter_call_says_so(monkeypatch, tmp_path, spe, note):
    """An epoch of 8 steps at steps_per_execution 3 ran timed calls of 3, 3 and 2 (Keras ends a call at the epoch's
    end); the profile runs calls of 3 only, so the record says the shorter call is not profiled and that slowdown
    divides by a timed ms/step that includes it. At 4 (calls of 4, 4), 8 and 512 (one call of 8) there is nothing
    to say. The old worker wrote no note."""
    from bench.instruments import profile
    from bench.results.cell import Cell
    from bench.results.record import new_record
    from bench.results.schema import Record
    from bench.run import worker

    cell = Cell(stack="keras3-jax", suite="classic", workload="mnist_mlp", task="fit", size="smoke", device="cpu",
                timeout_s=600.0)
    rec = Record.model_validate(new_record(cell), strict=True)
    rec.metrics.ms_per_step_p50, rec.metrics.steps_per_epoch = 2.0, 8
    rec.settings.steps_per_call = min(spe, 8)
    monkeypatch.setattr(profile, "capture", lambda *a, **kw: {"steps": 3, "wall_ms": 9.0, "warmup_steps": 3})
    worker.add_profile(rec, cell, lambda window, steps: rerun.Held(3, 3), tmp_path)
    assert rec.profile.reason is None and rec.profile.slowdown == pytest.approx(1.5)
    said = [n for n in rec.notes if n.startswith("profile:")]
    assert said == ([] if not note else [
        "profile: its calls ran 3 steps each; each timed epoch of 8 steps ran 2 such calls and a last one of 2 (Keras "
        "ends a call at the epoch's end), which the profile does not hold: profile.slowdown divides by a timed "
        "ms/step that includes it"])


@pytest.mark.parametrize("per_call, per_epoch, said", [(3, 8, "2 such calls and a last one of 2"),
                                                       (5, 13, "2 such calls and a last one of 3"),
                                                       (5, 8, "1 such call and a last one of 3"), (5, 3, None),
                                                       (4, 8, None), (None, 8, None), (3, None, None)])
def test_the_short_call_note_counts_the_whole_calls_and_the_last_ones_steps(per_call, per_epoch, said):
    """An epoch of ``per_epoch`` steps in calls of ``per_call``: its whole calls (``per_epoch // per_call``) and the
    shorter last one (the remainder); no note where the calls divide the epoch, where the epoch is one call shorter
    than ``per_call`` (the profile then runs calls of its length), or where either count is not recorded."""
    note = rerun.short_call_note(per_call, per_epoch)
    assert (note is None) if said is None else (f"ran {said} (Keras ends a call" in note)
