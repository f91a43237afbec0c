"""``bench compare`` on rows an older record or an odd CSV gives: a key column holding no value, a machine whose
model is not recorded, an older wording of the data placement, a CSV without a status column."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bench.results import compare as cmp
from bench.results.schema.effective import OLDER_PLACEMENT, placement_now

BASE_MS = [10.0, 10.3, 9.8, 10.1, 10.2]
ROW = {"stack": "pytorch", "suite": "classic", "workload": "w", "task": "fit", "size": "smoke", "variant": "default",
       "device": "cpu", "status": "ok", "metrics.ms_per_step_mean": 10.1, "repeats.ms_per_step_mean.values": BASE_MS}
ROOT = Path(__file__).resolve().parents[2]


def bench(*args):
    return subprocess.run([sys.executable, "-m", "bench", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_a_cell_whose_key_holds_no_value_is_one_cell_on_both_sides():
    """NaN equals nothing: a cell of an older record without ``size`` was a different key in each CSV, so
    ``not_compared`` listed it twice (``ok, absent`` and ``absent, ok``) though ``compare`` compared it, and a cell
    that failed in B twice (``ok, absent``, ``absent, failed``)."""
    a = pd.DataFrame([{**ROW, "size": None}, {**ROW, "size": None, "workload": "v"}])
    b = a.assign(status=["ok", "failed"], reason=[None, "CUDA out of memory"])
    assert list(cmp.compare(a, b)["workload"]) == ["w"]
    left = cmp.not_compared(a, b)
    assert [(r["workload"], r["status_a"], r["status_b"], r["reason"]) for r in left.to_dict("records")] == [
        ("v", "ok", "failed", "CUDA out of memory")]
    assert cmp.not_compared(a, a).empty


def test_an_unknown_machine_is_no_difference_and_is_said_to_be_unknown(tmp_path):
    """A row whose record names no CPU (or GPU) model read ``machine: CPU: AMD EPYC -> CPU: unknown`` in ``differs``
    and was counted among the cells that "ran on another machine": unknown is no difference. ``differs`` names no
    machine then; ``unknown`` says which side records none, and the summary counts those cells apart."""
    a = pd.DataFrame([{**ROW, "env.cpu_model": "AMD EPYC"}, {**ROW, "workload": "v", "env.cpu_model": None}])
    b = pd.DataFrame([{**ROW, "env.cpu_model": None}, {**ROW, "workload": "v", "env.cpu_model": ""}])
    out = cmp.compare(a, b)
    assert list(out["differs"]) == ["", ""]
    assert list(out["unknown"]) == ["machine: B records no CPU model (A: CPU: AMD EPYC)",
                                    "machine: A and B record no CPU model"]
    gpu = {**ROW, "device": "gpu", "env.gpu.name": "NVIDIA H100 80GB HBM3"}
    out = cmp.compare(pd.DataFrame([{**gpu, "env.gpu.name": None}]), pd.DataFrame([gpu])).iloc[0]
    assert (out["differs"], out["unknown"]) == ("", "machine: A records no GPU model (B: NVIDIA H100 80GB HBM3)")
    known = cmp.compare(pd.DataFrame([gpu]), pd.DataFrame([{**gpu, "env.gpu.name": "NVIDIA A100"}])).iloc[0]
    assert (known["differs"], known["unknown"]) == ("machine: NVIDIA H100 80GB HBM3 -> NVIDIA A100", "")
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    p = bench("compare", tmp_path / "a.csv", tmp_path / "b.csv")
    assert p.returncode == 0, p.stderr
    assert "ran on another machine" not in p.stdout
    assert "2 of the cells compared could not be checked for another machine" in p.stdout


def test_a_setting_one_record_holds_and_the_other_does_not_is_said_to_be_unknown(tmp_path):
    """``differs`` skipped, silently, a setting in effect one row records and the other does not (an older record
    without a newer field: settings.steps_per_call, absent from every record before 2026-11-27), so matching by name
    assumed them equal. ``unknown`` names such settings in one phrase a side, a field whose nested columns a row
    holds none of by the field alone; the data columns by name; not the knob two variants differ in by design, nor
    a TF32 switch on a CPU row (NVIDIA_TF32_OVERRIDE, whose upper case the CPU rule missed); ``differs`` stays as
    it was, and the summary counts those cells apart."""
    old = {**ROW, "stack": "keras3-jax", "env.cpu_model": "AMD EPYC", "settings.steps_per_execution": 512,
           "settings.NVIDIA_TF32_OVERRIDE": "0"}
    new = {**old, "settings.steps_per_call": 4, "settings.optimizer.name": "Adam", "settings.optimizer.beta_1": 0.9,
           "settings.NVIDIA_TF32_OVERRIDE": None, "data.source": "synthetic"}
    out = cmp.compare(pd.DataFrame([old]), pd.DataFrame([new])).iloc[0]
    assert out["differs"] == ""
    assert out["unknown"] == ("settings A has no column for: steps_per_call, optimizer; "
                              "A has no column for: data.source")
    partly = {**old, "settings.optimizer.name": "Adam"}  # an optimizer without beta_1: that key alone
    back = cmp.compare(pd.DataFrame([new]), pd.DataFrame([partly])).iloc[0]
    assert back["unknown"] == ("settings B has no column for: steps_per_call, optimizer.beta_1; "
                               "B has no column for: data.source")
    gpu = {**old, "device": "gpu", "env.gpu.name": "NVIDIA H100 80GB HBM3"}  # on a GPU the override is in effect
    unset = cmp.compare(pd.DataFrame([gpu]), pd.DataFrame([{**gpu, "settings.NVIDIA_TF32_OVERRIDE": None}]))
    assert unset.iloc[0]["unknown"] == ""  # the column is there: its null is a value (unset), not unknown
    assert unset.iloc[0]["differs"] == ""  # nor a difference ('0' -> unset is not compared: one side holds none)
    assert cmp.compare(pd.DataFrame([old]), pd.DataFrame([old])).iloc[0]["unknown"] == ""
    bf16 = {**old, "variant": "precision=mixed_float16", "settings.precision": "mixed_float16",
            "settings_requested.precision": "mixed_float16"}  # the default records no precision here: by design
    both = pd.DataFrame([old, bf16])
    assert cmp.compare(both, both, variants=("default", "precision=mixed_float16")).iloc[0]["unknown"] == ""
    pd.DataFrame([old]).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame([new]).to_csv(tmp_path / "b.csv", index=False)
    p = bench("compare", tmp_path / "a.csv", tmp_path / "b.csv")
    assert p.returncode == 0, p.stderr
    assert "1 of the cells compared could not be checked for other settings" in p.stdout
    assert "could not be checked for another machine" not in p.stdout


@pytest.mark.parametrize(("stack", "backend", "old", "new"), [
    ("keras3-jax", "jax", "host", "host (NumPy)"),
    ("keras3-torch", "torch", "host", "host (NumPy)"),
    ("keras2-tf", "tensorflow", "host", "host (tf.data)"),
    ("keras3-torch", "torch", "backend tensors (device)", "device (torch tensors)"),
    ("keras3-tf", None, "backend tensors (device)", "host (tf.data)"),  # no backend recorded: the stack's
])
def test_an_older_wording_of_one_data_placement_is_no_difference(stack, backend, old, new):
    """Before 2026-11-23 the Keras engine recorded ``numpy_fit`` as ``host`` (results/rounds-smoke holds such
    records); now ``host (NumPy)`` on JAX and PyTorch, ``host (tf.data)`` on TensorFlow, for the same batches:
    ``differs`` read ``settings.train_data_placement: host -> host (NumPy)``. One alias table says it
    (``OLDER_PLACEMENT``); another placement is still a difference."""
    row = {**ROW, "stack": stack, "settings.keras_backend": backend}
    a = pd.DataFrame([{**row, "settings.train_data_placement": old}])
    assert cmp.compare(a, a.assign(**{"settings.train_data_placement": new})).iloc[0]["differs"] == ""
    assert placement_now(old, backend or "tensorflow") == new == OLDER_PLACEMENT[(old, backend or "tensorflow")]
    other = "host (NumPy)" if new == "device (torch tensors)" else "device (torch tensors)"
    assert cmp.compare(a, a.assign(**{"settings.train_data_placement": other})).iloc[0]["differs"] == (
        f"settings.train_data_placement: {old} -> {other}")


def test_the_committed_older_run_against_a_newer_one_names_no_placement_wording():
    """results/rounds-smoke (Keras records of ``host``) against results/cpu-smoke (``host (tf.data)``,
    ``host (NumPy)``): the default cells made their batches as before; only the augmented cells' pipeline differs."""
    from bench.results.rows import read_rows

    out = cmp.compare(read_rows(ROOT / "results/rounds-smoke/rounds-smoke-cpu.csv"),
                      read_rows(ROOT / "results/cpu-smoke/classic-smoke-cpu.csv"))
    placement = out[out["differs"].str.contains("train_data_placement")]
    assert len(out) == 15 and set(placement["workload"]) == {"cifar10_cnn"}


def test_a_csv_without_a_status_column_is_one_line(tmp_path):
    """``compare`` read the status column unchecked: a KeyError traceback."""
    pd.DataFrame([ROW]).drop(columns="status").to_csv(tmp_path / "a.csv", index=False)
    p = bench("compare", tmp_path / "a.csv", tmp_path / "a.csv")
    assert p.returncode == 2 and "CSV A lacks columns: status" in p.stderr and "Traceback" not in p.stderr


def test_the_keras_overhead_table_reads_an_older_placement_wording_as_todays():
    """The "training data" column shows the placement's first word: an older ``backend tensors (device)`` read
    ``backend``, a word of neither side; it is ``device`` on PyTorch (Keras gathers the batch from the tensors there)
    and ``host`` on TensorFlow (tf.data), as ``OLDER_PLACEMENT`` says."""
    from bench.results.report.versions import data_path

    old = {"settings.train_data_placement": "backend tensors (device)"}
    assert data_path(pd.Series({**old, "settings.keras_backend": "torch"})) == "device"
    assert data_path(pd.Series({**old, "settings.keras_backend": "tensorflow"})) == "host"
    assert data_path(pd.Series({"settings.train_data_placement": "host (NumPy)"})) == "host"


def test_a_null_repeat_is_no_time_and_a_word_among_the_repeats_is_one_line(tmp_path):
    """A JSON null among a row's repeat values was float(None): a TypeError traceback. It is no time (n/a, with the
    reason); a value that is no number at all is refused in one line naming the column."""
    row = {**ROW, "repeats.ms_per_step_mean.values": [10.0, None, 10.2]}
    out = cmp.compare(pd.DataFrame([ROW]), pd.DataFrame([row])).iloc[0]
    assert (out["verdict"], out["reason"]) == ("n/a", "a value is not a positive finite number (nan)")
    for name, values in (("null", "[10.0, null, 10.2]"), ("word", '[10.0, "x", 10.2]')):
        pd.DataFrame([{**ROW, "repeats.ms_per_step_mean.values": values}]).to_csv(tmp_path / f"{name}.csv",
                                                                                 index=False)
    p = bench("compare", tmp_path / "null.csv", tmp_path / "null.csv")
    assert p.returncode == 0 and "1 n/a" in p.stdout, p.stderr
    p = bench("compare", tmp_path / "word.csv", tmp_path / "word.csv")
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.count("\n") == 1
    assert "repeats.ms_per_step_mean.values holds a value that is not a number" in p.stderr


def test_a_whole_number_read_back_as_a_float_is_named_as_recorded():
    """A CSV reads a knob's ``0`` back as ``0.0``: ``differs`` said ``settings.num_workers: 0.0 -> 1.0``."""
    a = pd.DataFrame([{**ROW, "settings.num_workers": 0.0, "settings.steps_per_execution": 1.0}])
    b = a.assign(**{"settings.num_workers": 1.0, "settings.steps_per_execution": 512.0})
    assert cmp.compare(a, b).iloc[0]["differs"] == (
        "settings.num_workers: 0 -> 1; settings.steps_per_execution: 1 -> 512")


def test_a_setting_left_empty_on_purpose_is_not_unknown_and_no_tf32_switch_counts_on_a_cpu():
    """``unknown`` named a setting a row's CSV has a column for but leaves empty by design: ``augmentation`` (the
    Keras engine records it only when augmenting) under ``augment=false``, and on CPU rows the TF32 switches the
    CPU rule missed by name (``jax_default_matmul_precision``: the schema's ``TF32_SWITCHES`` now lists them all)."""
    base = {**ROW, "stack": "keras3-jax", "env.cpu_model": "AMD EPYC", "settings.augmentation": "random shifts",
            "settings.augment": True,
            "settings.jax_default_matmul_precision": "float32"}
    off = {**base, "variant": "augment=false", "settings.augmentation": None, "settings.augment": False,
           "settings_requested.augment": False}
    both = pd.DataFrame([base, off])
    out = cmp.compare(both, both, variants=("default", "augment=false")).iloc[0]
    assert (out["unknown"], out["differs"]) == ("", "")
    older = pd.DataFrame([{k: v for k, v in base.items() if k != "settings.jax_default_matmul_precision"}])
    assert cmp.compare(older, pd.DataFrame([base])).iloc[0]["unknown"] == ""  # a CPU row: no TF32 to compare
    on_gpu = {"device": "gpu", "env.gpu.name": "NVIDIA H100 80GB HBM3"}
    assert cmp.compare(older.assign(**on_gpu), pd.DataFrame([{**base, **on_gpu}])).iloc[0]["unknown"] == (
        "settings A has no column for: jax_default_matmul_precision")


def test_every_setting_whose_help_names_tf32_is_one_of_the_tf32_switches():
    from bench.results.schema import EffectiveSettings
    from bench.results.schema.effective import TF32_SWITCHES

    named = {n for n, f in EffectiveSettings.model_fields.items() if "tf32" in (f.description or "").lower()}
    assert named <= TF32_SWITCHES <= set(EffectiveSettings.model_fields)
