"""mnist_hierarchical_rnn's row LSTM: the script's ``TimeDistributed(LSTM(128))`` (examples/mnist_hierarchical_rnn.py
@2.0.8:68) ran as one call on the rows reshaped into the batch on Keras 2.0.8 (keras/layers/wrappers.py@2.0.8:190-208)
and still does on tf-keras (tf_keras/src/layers/rnn/time_distributed.py@2.21.0:81-85, 168, 218-260); Keras 3 calls it
once per row (keras/src/layers/rnn/time_distributed.py@v3.15.1:128-134). The knob ``row_lstm=reshape`` builds 2017's
form on any Keras; the record says which form ran, measured.

The independent count here patches the LSTM class's ``call`` (every LSTM of the model, the column LSTM included),
where ``row_lstm_form`` wraps the one row-LSTM instance.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.core import knobs
from bench.core.families.keras import KerasEpochSettings
from bench.core.settings import SettingsError
from bench.models.workloads import get_workload
from tests.conftest import needs_keras_torch
from tests.helpers.cells import engine_cell, make_cell
from tests.helpers.tables import table_rows

ROOT = Path(__file__).resolve().parents[3]
PARAMS = get_workload("mnist_hierarchical_rnn").published.params  # the script's model.summary(), its folder's spec

#: Builds both forms in one process (Keras' backend is per process), copies the weights of one into the other, and
#: prints their parameter counts, outputs on 3 images, every LSTM call (layer name, sequences) and row_lstm_form.
PROBE = r"""
import json, sys
import numpy as np
if sys.argv[1] == "tf_keras":
    import tf_keras as keras
else:
    import keras
from bench.models.workloads.mnist_hierarchical_rnn.models import build_keras as hrnn_keras, row_lstm_form

real, calls = keras.layers.LSTM.call, []

def counted(self, inputs, *args, **kwargs):
    calls.append([self.name, int(inputs.shape[0])])
    return real(self, inputs, *args, **kwargs)

models = {f: hrnn_keras(keras, {"num_classes": 10}, row_lstm=f) for f in ("time_distributed", "reshape")}
models["reshape"].set_weights(models["time_distributed"].get_weights())
x = np.random.default_rng(0).random((3, 28, 28, 1), dtype=np.float32)
out = {}
for form, m in models.items():
    calls.clear()
    keras.layers.LSTM.call = counted
    try:
        y = m(x, training=False)
    finally:
        keras.layers.LSTM.call = real
    y = keras.ops.convert_to_numpy(y) if hasattr(keras, "ops") else y.numpy()
    out[form] = {"params": int(m.count_params()), "y": np.asarray(y, np.float64).tolist(), "calls": list(calls),
                 "measured": row_lstm_form(keras, m)}
print("OBSERVED" + json.dumps(out))
"""


def observe(keras: str, backend: str) -> dict:
    """``PROBE``'s findings under ``keras`` (``keras`` or ``tf_keras``) on ``backend``, in a fresh process."""
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-c", PROBE, keras], env=env, capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    line = next((x for x in p.stdout.splitlines() if x.startswith("OBSERVED")), None)
    assert line, p.stderr[-3000:]
    return json.loads(line.removeprefix("OBSERVED"))


def row_calls(calls: list) -> list[int]:
    return [n for name, n in calls if name == "row_lstm"]


def assert_same_model(seen: dict) -> None:
    assert seen["time_distributed"]["params"] == seen["reshape"]["params"] == PARAMS
    assert get_workload("mnist_hierarchical_rnn").params == PARAMS
    np.testing.assert_allclose(seen["reshape"]["y"], seen["time_distributed"]["y"], rtol=1e-5, atol=1e-6)
    for form in seen.values():  # the column LSTM: one call on the 3 images, whatever the row form
        assert [n for name, n in form["calls"] if name != "row_lstm"] == [3]
        assert form["measured"]["row_lstm_calls_per_forward"] == len(row_calls(form["calls"]))


@pytest.mark.parametrize("backend", ["jax", "torch", "tensorflow"])
def test_keras_3_runs_time_distributed_per_row_and_the_reshape_variant_once_same_weights_same_outputs(backend):
    for module in ("keras", backend):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    seen = observe("keras", backend)
    assert_same_model(seen)
    td, rs = seen["time_distributed"], seen["reshape"]
    assert row_calls(td["calls"]) == [3] * 28  # keras/src/layers/rnn/time_distributed.py@v3.15.1:128-134
    assert td["measured"] == {"row_lstm_calls_per_forward": 28, "row_lstm_form": "per_row"}
    assert row_calls(rs["calls"]) == [3 * 28]  # 2017's form: all rows in one batch
    assert rs["measured"] == {"row_lstm_calls_per_forward": 1, "row_lstm_form": "reshape"}


def test_tf_keras_runs_the_scripts_time_distributed_in_2017s_form():
    """The keras2-tf stack: tf-keras reshapes for a built-in layer, so the default is already one call."""
    for module in ("tf_keras", "tensorflow"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the keras2-tf image has it)")
    seen = observe("tf_keras", "tensorflow")
    assert_same_model(seen)
    for form in seen.values():
        assert row_calls(form["calls"]) == [3 * 28]
        assert form["measured"] == {"row_lstm_calls_per_forward": 1, "row_lstm_form": "reshape"}


@needs_keras_torch
@pytest.mark.parametrize("row_lstm, calls, form", [("time_distributed", 28, "per_row"), ("reshape", 1, "reshape")])
def test_the_record_states_the_form_the_trained_model_ran(monkeypatch, row_lstm, calls, form):
    """keras3-torch through the engine: the knob reaches the builder, and ``settings`` carries the form measured,
    equal to a count of our own on the model ``fit`` trained."""
    import dataclasses

    import keras

    from bench.core.stacks import get_stack
    from bench.models.engines.keras import epochs as keras_epochs

    counted: list[int] = []
    real_fit, real_call = keras.Model.fit, keras.layers.LSTM.call

    def fit_then_count(self, *args, **kwargs):
        history = real_fit(self, *args, **kwargs)
        seen: list[str] = []

        def call(layer, inputs, *a, **k):
            seen.append(layer.name)
            return real_call(layer, inputs, *a, **k)

        monkeypatch.setattr(keras.layers.LSTM, "call", call)
        self(np.zeros((2, 28, 28, 1), np.float32))
        monkeypatch.setattr(keras.layers.LSTM, "call", real_call)
        counted.append(seen.count("row_lstm"))
        return history

    monkeypatch.setattr(keras.Model, "fit", fit_then_count)
    w = get_workload("mnist_hierarchical_rnn")
    w = dataclasses.replace(w, samples={"smoke": 16, "full": None})
    ds = w.load_data("smoke", "synthetic")
    out = keras_epochs.fit(get_stack("keras3-torch"), w, ds, engine_cell("keras3-torch", w, 2, 8),
                           KerasEpochSettings(row_lstm=row_lstm))
    s = out.settings.model_dump(exclude_unset=True)
    assert counted == [calls]
    assert s["row_lstm_calls_per_forward"] == calls and s["row_lstm_form"] == form
    assert out.model.model_dump(exclude_unset=True)["params_total"] == PARAMS


def test_the_knob_is_unsupported_where_there_is_no_row_lstm():
    from bench.run.worker import run_cell

    assert knobs.KNOBS["keras"]["row_lstm"] == ("time_distributed", "reshape")
    assert knobs.DEFAULTS["keras"]["row_lstm"] == "time_distributed"
    assert knobs.model_knob_problem({"row_lstm": "reshape"}, "mnist_hierarchical_rnn", ("row_lstm",)) is None
    assert knobs.model_knob_problem({"row_lstm": "time_distributed"}, "mnist_mlp", ()) is None  # the default
    reason = knobs.model_knob_problem({"row_lstm": "reshape"}, "mnist_mlp", ())
    assert reason and "mnist_hierarchical_rnn" in reason and "mnist_mlp" in reason

    def run(stack: str, workload: str, value: str) -> dict:
        return run_cell(make_cell(stack=stack, suite="classic", workload=workload, task="fit", size="smoke",
                                  device="cpu", variant=f"row_lstm={value}", settings={"row_lstm": value}))

    rec = run("keras3-jax", "babi_rnn", "reshape")
    assert rec["status"] == "unsupported" and "applies only to mnist_hierarchical_rnn" in rec["reason"]
    rec = run("pytorch", "mnist_hierarchical_rnn", "reshape")  # a Keras knob: the PyTorch twin reshapes anyway
    assert rec["status"] == "unsupported" and "does not apply to the torch engine" in rec["reason"]
    rec = run("keras3-jax", "mnist_hierarchical_rnn", "sideways")
    assert rec["status"] == "unsupported" and "row_lstm='sideways' is not valid" in rec["reason"]
    with pytest.raises(SettingsError, match="row_lstm=sideways is not valid"):
        knobs.parse_assignment("row_lstm=sideways")


def test_bench_list_and_knobs_name_the_variant(capsys):
    from bench.cli import main

    for command in (["list"], ["knobs"]):
        with pytest.raises(SystemExit) as e:
            main(command)
        assert e.value.code == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ") and ln.split()}
    assert "Keras variants: --set row_lstm=reshape" in lines["mnist_hierarchical_rnn"]
    assert "row_lstm" not in lines["mnist_mlp"]
    assert "'time_distributed', 'reshape'" in lines["row_lstm"]


def test_the_classic_table_says_which_form_each_stack_ran():
    import pandas as pd

    from bench.results.report.classic import classic_section
    from bench.results.report.common import Footnotes

    base = {"suite": "classic", "workload": "mnist_hierarchical_rnn", "task": "fit", "size": "full",
            "status": "ok", "data.source": "real", "metrics.ms_per_step_mean": 5.0}
    df = pd.DataFrame([
        {**base, "stack": "keras3-jax", "variant": "default", "settings.row_lstm_form": "per_row"},
        {**base, "stack": "keras2-tf", "variant": "default", "settings.row_lstm_form": "reshape"},
        {**base, "stack": "keras3-torch", "variant": "default"},  # a record of older code
        {**base, "stack": "pytorch", "variant": "default"},
        {**base, "stack": "keras3-jax", "variant": "row_lstm=reshape", "settings.row_lstm_form": "reshape"},
        {**base, "workload": "mnist_mlp", "stack": "keras3-jax", "variant": "default"},
    ])
    table = "\n".join(classic_section(df, Footnotes()))
    rows = {r[0]: r for r in table_rows(table)}
    assert rows["workload"] == ["workload", "task", "keras2-tf", "keras3-jax", "keras3-torch", "pytorch"]
    assert rows["mnist_hierarchical_rnn"][2:] == ["5.00 · row LSTM ×1", "5.00 · row LSTM ×28",
                                                  "5.00 · row LSTM form not recorded", "5.00 · row LSTM ×1 (twin)"]
    assert "5.00 · row LSTM ×1" in rows["mnist_hierarchical_rnn (row_lstm=reshape)"]
    assert not any("row LSTM" in c for c in rows["mnist_mlp"])
    assert "812 sequential recurrent steps" in table and "--set row_lstm=reshape" in table
