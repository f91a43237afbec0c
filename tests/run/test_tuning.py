"""Knobs, sweep grids, the tuning suite's default grid, bench compare and the report."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bench.cli import main
from bench.core import knobs
from bench.core.atomic import write_json_atomic
from bench.core.families.keras import KerasEpochSettings, KerasStepSettings
from bench.core.families.torch import TorchEpochSettings
from bench.core.settings import SettingsError
from bench.core.stacks import get_stack
from bench.results import report
from bench.results.collect import collect
from bench.results.compare import compare, min_attainable_p
from bench.results.record import result_path
from bench.results.report import paper as report_paper
from bench.results.report import tuning as report_tuning
from bench.run import plan, sweep
from tests.conftest import needs_torch
from tests.helpers.records import fake_record, paper_record
from tests.helpers.tables import has_cells, rows_starting, table_rows


def test_knob_checks_give_reasons():
    assert knobs.check(get_stack("keras3-jax"), {"data_pipeline": "tf_data_numpy"}).startswith("tf_data_numpy needs")
    assert "Keras 3" in knobs.check(get_stack("keras2-tf"), {"jit_compile": "auto"})
    assert "steps_per_execution=1" in knobs.check(get_stack("keras3-torch"), {"steps_per_execution": 512})
    assert knobs.check(get_stack("keras3-tf"), {"data_pipeline": "tf_data_numpy", "jit_compile": "auto",
                                                "steps_per_execution": 512}) is None
    assert "float16 autocast" in knobs.check(get_stack("pytorch"), {"grad_scaler": True})
    assert "does not apply" in knobs.check(get_stack("pytorch"), {"jit_compile": True})
    assert "not valid" in knobs.check(get_stack("pytorch"), {"compile": "fast"})
    assert "not valid" in knobs.check(get_stack("keras3-tf"), {"steps_per_execution": 0})


def test_settings_are_typed_with_one_default_each():
    s = TorchEpochSettings.from_dict({"data_pipeline": "tensor_dataset", "preload": True})
    assert (s.data_pipeline, s.preload, s.num_workers, s.compile) == ("tensor_dataset", True, 0, "none")
    with pytest.raises(SettingsError, match="num_workers=-1 is not valid; expected int"):
        TorchEpochSettings.from_dict({"num_workers": -1})
    # a knob set to its own default is valid, even where its allowed values (int: positive) leave the default out
    assert TorchEpochSettings.from_dict({"num_workers": 0}).num_workers == 0
    assert knobs.parse_assignment("num_workers=0") == ("num_workers", 0)
    assert TorchEpochSettings.problem({"persistent_workers": 0}) is not None  # 0 is not the default False
    with pytest.raises(SettingsError, match="does not apply to the keras engine"):
        KerasEpochSettings.from_dict({"preload": True})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.preload = False
    # the tables the CLI, the sweeps and the variant names read come from the classes
    assert knobs.DEFAULTS == {
        "keras": {"data_pipeline": "numpy_fit", "steps_per_execution": 1, "precision": "float32", "tf32": "default",
                  "sync": "epoch", "row_lstm": "time_distributed"},
        "torch": {"data_pipeline": "tensors_on_device", "num_workers": 0, "pin_memory": False,
                  "persistent_workers": False, "preload": False, "compile": "none",
                  "precision": "float32", "grad_scaler": False, "tf32": "default", "sync": "epoch"},
        "jax": {"data_pipeline": "numpy_batches", "jit_compile": True, "precision": "float32", "tf32": "default",
                "sync": "epoch"}}
    assert knobs.KNOBS["keras"]["jit_compile"] == (False, True, "auto")
    assert knobs.STEP_KNOBS == {"keras": ("jit_compile", "tf32", "sync"), "torch": ("compile", "tf32", "sync")}
    assert set(knobs.DOCS) == set(knobs.KNOBS["keras"]) | set(knobs.KNOBS["torch"])
    # jit_compile has no fixed default: None means the engine's own for the stack (documented on the field)
    assert KerasEpochSettings().jit_compile is None and KerasStepSettings().jit_compile is None


def test_default_grid_has_every_reference_row_for_its_stack():
    """Each row of the reference CSV (and its preload column) is a variant of the matching stack."""
    variants = {sid: {v.name for v in sweep.default_grid("tuning").variants(sid)} for sid in ("keras3-tf", "pytorch")}
    ref = report_tuning.reference_times()
    assert len(ref) == 33 + 8  # 33 rows, 8 of them PyTorch tensor_dataset rows with a preload time
    missing = [key for key in ref if key[1] not in variants[key[0]]]
    assert not missing


def test_default_grid_baselines_and_dedup():
    grid = sweep.default_grid("tuning")
    torch_v = grid.variants("pytorch")
    assert torch_v[0].baseline and torch_v[0].settings == {"data_pipeline": "torchvision_dataset_transforms"}
    assert sum(v.baseline for v in torch_v) == 1
    assert len({v.name for v in torch_v}) == len(torch_v)
    keras_v = grid.variants("keras3-jax")
    assert keras_v[0].name == "default" and keras_v[0].baseline


def test_tuning_suite_plans_one_cell_per_variant():
    cells = plan.expand(["keras3-jax", "pytorch"], "tuning", "smoke", "cpu")
    assert {c.workload for c in cells} == {"mnist_cnn_tuning"}  # the study's CNN, not classic's 2017 mnist_cnn
    assert len([c for c in cells if c.baseline]) == 2
    assert len({c.id for c in cells}) == len(cells)


_G = "workload: mnist_cnn\ntask: fit\n"


@pytest.mark.parametrize("text, message", [
    ("workload: [", "not valid YAML"),
    ("- a\n- b", "g.yaml: expected a mapping"),
    (_G, "no 'engines' or 'stacks'"),
    (_G + "engines: {tensorflow: {grid: []}}", "engines.tensorflow: Input should be 'keras', 'torch' or 'jax'"),
    (_G + "stacks: {torch: {grid: []}}", "stacks.torch: Input should be 'keras2-tf'"),
    (_G + "engines: {torch: {grid: [{compile: none}]}}", "engines.torch.grid[0].compile: expected a list"),
    (_G + "engines: {torch: {grid: [{compile: []}]}}", "engines.torch.grid[0].compile: List should have at least 1"),
    # unknown keys: a misspelt section was ignored (the grid ran its baseline alone), a misspelt knob ran as
    # unsupported records
    (_G + "engine: {torch: {grid: []}}", "engine: unknown key (a grid file has name, workload, task, engines"),
    (_G + "engines: {torch: {grids: [{compile: [default]}]}}", "engines.torch.grids: unknown key (a block has"),
    (_G + "engines: {torch: {grid: [{compiled: [default]}]}}",
     "engines.torch.grid[0]: setting 'compiled' does not apply to the torch engine"),
    (_G + "engines: {torch: {baseline: {tf32: on}}}", "engines.torch.baseline: tf32=True is not valid"),
    # wrong types: never coerced
    (_G + "engines: {torch: {grid: [{num_workers: ['6']}]}}", "engines.torch.grid[0]: num_workers='6' is not valid"),
    ("workload: mnist_cnn\ntask: 3\nengines: {torch: {}}", "task: Input should be a valid string"),
    (_G + "engines: {torch: {baseline: [compile]}}", "engines.torch.baseline: expected a mapping"),
])
def test_bad_grid_files_are_clear_errors(tmp_path, capsys, text, message):
    f = tmp_path / "g.yaml"
    f.write_text(text)
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(f), "--stack", "pytorch", "--device", "cpu"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_unknown_workload_in_grid_is_a_usage_error(tmp_path, capsys):
    f = tmp_path / "g.yaml"
    f.write_text("workload: resnet\ntask: fit\nengines: {torch: {grid: []}}")
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(f), "--stack", "pytorch", "--device", "cpu"])
    assert e.value.code == 2 and "unknown workload 'resnet'" in capsys.readouterr().err


@needs_torch
@pytest.mark.cover
def test_sweep_runs_and_skips_invalid_combinations_with_reason(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: mini\nworkload: mnist_cnn_tuning\ntask: fit\nengines:\n  torch:\n"
        "    baseline: {data_pipeline: torchvision_dataset_transforms, num_workers: 0}\n"
        "    grid:\n      - {data_pipeline: [tensor_dataset], preload: [false, true]}\n"
        "      - {data_pipeline: [tensors_on_device], grad_scaler: [true]}\n")
    p = subprocess.run([sys.executable, "-m", "bench", "sweep", str(grid), "--stack", "pytorch", "--device", "cpu",
                        "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    recs = {json.loads(f.read_text())["variant"]: json.loads(f.read_text())
            for f in (tmp_path / "run" / "pytorch").glob("*.json")}
    assert set(recs) == {"data_pipeline=torchvision_dataset_transforms", "data_pipeline=tensor_dataset",
                         "data_pipeline=tensor_dataset+preload=true", "grad_scaler=true"}
    assert recs["grad_scaler=true"]["status"] == "unsupported"
    assert "float16 autocast" in recs["grad_scaler=true"]["reason"]
    base = recs["data_pipeline=torchvision_dataset_transforms"]
    assert base["status"] == "ok" and base["baseline"] is True
    assert base["settings"]["data_pipeline"] == "torchvision_dataset_transforms"
    # torchvision.datasets.MNIST with ToTensor + Normalize: the constants are recorded as our assumption
    assert base["settings"]["normalize"]["mean"] == [0.1307] and "assumed" in base["settings"]["normalize"]["source"]
    assert base["metrics"]["fit_call_s_per_epoch"] > 0
    assert recs["data_pipeline=tensor_dataset+preload=true"]["settings"]["preload"] is True
    # every knob is in the record, the unset ones at their defaults (one source: TorchEpochSettings)
    assert set(knobs.KNOBS["torch"]) <= set(base["settings"])
    assert base["settings"]["tf32"] == "default" and base["settings"]["torch_float32_matmul_precision"] == "highest"
    assert base["settings_requested"] == {"data_pipeline": "torchvision_dataset_transforms"}  # defaults dropped
    # the per-item pipeline feeds the same values: equal first-epoch loss up to shuffling order is not
    # guaranteed, but the model and data sizes are
    assert base["metrics"]["steps_per_epoch"] == recs["data_pipeline=tensor_dataset"]["metrics"]["steps_per_epoch"]


# ---- compare ------------------------------------------------------------------------------------------

def frame(values_by_variant: dict[str, list[float]]):
    rows = []
    for variant, values in values_by_variant.items():
        rows.append({"stack": "pytorch", "suite": "tuning", "workload": "mnist_cnn", "task": "fit", "size": "full",
                     "variant": variant, "device": "gpu", "status": "ok",
                     "metrics.ms_per_step_mean": float(pd.Series(values).median()),
                     "repeats.ms_per_step_mean.values": values})
    return pd.DataFrame(rows)


def test_compare_flags_real_changes_and_not_noise():
    a = frame({"x": [10.0, 10.1, 9.9, 10.0, 10.05], "y": [5.0, 5.2, 4.9, 5.1, 5.0], "z": [1.0, 1.0, 1.0]})
    b = frame({"x": [12.0, 12.1, 11.9, 12.2, 12.0], "y": [5.1, 4.9, 5.0, 5.2, 5.05], "z": [2.0, 2.0, 2.0]})
    t = compare(a, b).set_index("variant")
    assert t.loc["x", "verdict"] == "higher" and t.loc["x", "ratio"] == pytest.approx(1.2)
    assert t.loc["x", "p_value"] < 0.05
    assert t.loc["y", "verdict"] == "noise"
    assert t.loc["z", "verdict"] == "underpowered"  # 3 vs 3 repeats cannot reach p < 0.05
    assert min_attainable_p(3, 3) == pytest.approx(0.1)


def test_compare_cli(tmp_path, capsys):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    frame({"x": [10.0, 10.1, 9.9, 10.0, 10.05]}).to_csv(a, index=False)
    frame({"x": [8.0, 8.1, 7.9, 8.0, 8.05]}).to_csv(b, index=False)
    with pytest.raises(SystemExit) as e:
        main(["compare", str(a), str(b), "-o", str(tmp_path / "c.csv")])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "lower" in out and "1 changed beyond noise" in out
    assert pd.read_csv(tmp_path / "c.csv")["verdict"].tolist() == ["lower"]
    bad = tmp_path / "bad.csv"
    bad.write_text("foo,bar\n1,2\n")
    with pytest.raises(SystemExit) as e:
        main(["compare", str(a), str(bad)])
    assert e.value.code == 2 and "lacks columns" in capsys.readouterr().err


# ---- report -------------------------------------------------------------------------------------------

def test_report_renders_tuning_section_with_findings_and_plots(tmp_path):
    recs = [
        fake_record("keras3-tf", "default", {}, 60.0, baseline=True),
        fake_record("keras3-tf", "jit_compile=false", {"jit_compile": False}, 65.0),
        fake_record("keras3-tf", "jit_compile=false+steps_per_execution=512",
                    {"jit_compile": False, "steps_per_execution": 512}, 40.0),
        fake_record("keras3-tf", "jit_compile=auto+precision=mixed_float16+steps_per_execution=512",
                    {"jit_compile": "auto", "precision": "mixed_float16", "steps_per_execution": 512}, 15.0),
        fake_record("keras3-jax", "data_pipeline=tf_data_numpy+jit_compile=false",
                    {"data_pipeline": "tf_data_numpy", "jit_compile": False}, None, status="unsupported"),
        fake_record("pytorch", "data_pipeline=torchvision_dataset_transforms",
                    {"data_pipeline": "torchvision_dataset_transforms"}, 300.0, baseline=True),
        fake_record("pytorch", "data_pipeline=tensor_dataset", {"data_pipeline": "tensor_dataset"}, 30.0),
    ]
    recs[3][1]["settings"]["jit_compile"] = True  # what Keras resolves jit_compile="auto" to on a GPU
    run = tmp_path / "run"
    for c, r in recs:
        write_json_atomic(result_path(run, c), r)
    collect(run, tmp_path / "run.csv")
    path = report.write_report(report.load_runs([tmp_path / "run.csv"])[0], tmp_path / "out")
    text = path.read_text()
    assert "Fake H100" in text and "999.1" in text
    # out of the box vs best, with the speedup
    assert has_cells(text, ["pytorch", "data_pipeline=torchvision_dataset_transforms", "300.0",
                            "data_pipeline=tensor_dataset", "30.0", "10.00x"])
    assert has_cells(text, ["keras3-tf", "default", "60.0",
                            "jit_compile=auto+precision=mixed_float16+steps_per_execution=512", "15.0", "4.00x"])
    # reference beside ours: the published 65.5 s for numpy_fit, spe 1, jit false, float32
    assert has_cells(text, ["keras3-tf", "jit_compile=false", "ok", "65.0", "65.5"])
    assert "*steps_per_execution matters a lot for Keras*: holds here" in text
    assert "*mixed precision + jit gives Keras/TF its best time*: holds here" in text
    assert "run with precision mixed_float16, jit_compile True in effect" in text
    assert "unsupported [^1]" in text and "[^1]: keras3-jax mnist_cnn" in text and "needs tf.data" in text
    assert "![Training time per configuration](plots/run/tuning_time.png)" in text
    assert (tmp_path / "out" / "plots" / "run" / "tuning_time.png").stat().st_size > 1000
    assert (tmp_path / "out" / "plots" / "run" / "tuning_energy_vs_time.png").exists()



def test_a_tuning_cell_of_other_inputs_is_never_the_best_of_the_default_one(tmp_path):
    """keras3-tf's out-of-the-box cell (batch 256, 100 s), the same at batch 1024 (30 s, its id names the batch) and
    steps_per_execution 512 (60 s): the best of the batch-256 cells is the 512 one (1.67x); the batch-1024 cell has a
    line of its own, and the grid names its batch. The old table put the 30 s cell as the best "default" of the
    batch-256 default, a 3.33x speedup of no knob, and listed two identical "default (baseline)" grid lines."""
    run = tmp_path / "run"
    spe = {"steps_per_execution": 512}
    big = "batch_size=1024"
    for (c, r), inputs in ((fake_record("keras3-tf", "default", {}, 100.0, baseline=True), ""),
                           (fake_record("keras3-tf", "default", {}, 30.0, baseline=True, batch=1024), big),
                           (fake_record("keras3-tf", "steps_per_execution-512", spe, 60.0), "")):
        r["cell_id"] = f"{c.id}__{inputs}" if inputs else c.id
        write_json_atomic(result_path(run, c).with_name(f"{r['cell_id']}.json"), r)
    collect(run, tmp_path / "run.csv")
    text = report.write_report(report.load_runs([tmp_path / "run.csv"])[0], tmp_path / "out").read_text()
    assert has_cells(text, ["keras3-tf", "default", "100.0", "steps_per_execution-512", "60.0", "1.67x"])
    assert has_cells(text, ["keras3-tf (batch_size=1024)", "default", "30.0", "default", "30.0", "1.00x"])
    assert has_cells(text, ["keras3-tf", "default, batch_size=1024 (baseline)", "ok", "30.0"])
    assert "3.33x" not in text


def test_the_mixed_jit_finding_reads_the_settings_in_effect_not_the_request():
    """jit_compile="auto" is XLA on a GPU and not on a CPU (Keras records jit_compile False on keras3-tf there): the
    finding counted the request "auto" as jit and said "holds" of a fastest row that ran without XLA."""
    c, r = fake_record("keras3-tf", "jit_compile=auto+precision=mixed_float16", {"jit_compile": "auto",
                                                                                "precision": "mixed_float16"}, 15.0)
    rows = pd.DataFrame([{"stack": "keras3-tf", "variant": c.variant, "status": "ok", "time_s": 15.0,
                          "settings_requested.jit_compile": "auto", "settings_requested.precision": "mixed_float16",
                          "settings.jit_compile": False, "settings.precision": "mixed_float16"}])
    line = report_tuning.findings(rows)[-1]
    assert "does not hold here" in line and "jit_compile False in effect" in line
    assert "holds here" in report_tuning.findings(rows.assign(**{"settings.jit_compile": True}))[-1]
    older = rows.drop(columns=["settings.jit_compile", "settings.precision"])  # records without the settings in effect
    assert "not judged" in report_tuning.findings(older)[-1]


def _keras_row(variant, requested, spe, time_s, jit=True, per_call=None):
    """An ok keras3-tf tuning row as the CSV holds it: the knobs asked for and the settings in effect (``per_call``:
    ``settings.steps_per_call``, absent when None, as in a record from before the field)."""
    return {"stack": "keras3-tf", "workload": "mnist_cnn_tuning", "task": "fit", "size": "full", "device": "gpu",
            "batch_size": 256, "variant": variant, "status": "ok", "time_s": time_s,
            **{f"settings_requested.{k}": v for k, v in requested.items()}, "settings.steps_per_execution": spe,
            "settings.jit_compile": jit, "settings.precision": "float32", "settings.data_pipeline": "numpy_fit",
            **({"settings.steps_per_call": per_call} if per_call is not None else {})}


def test_the_steps_per_execution_finding_pairs_rows_by_the_settings_in_effect_not_the_request():
    """The finding paired a row that asked for steps_per_execution=512 with the variant that asked for the same knobs
    without it: a 512 that did not take effect was said to train faster than 1, a row differing in jit_compile in
    effect was paired, and Keras 3's default (jit "auto", XLA on a GPU) was never paired with jit_compile=auto."""
    spe = "steps_per_execution=512"

    def finding(*rows):
        return report_tuning.findings(pd.DataFrame(list(rows)))[0]

    both_auto = finding(_keras_row("default", {}, 1, 60.0),
                        _keras_row(f"jit_compile=auto+{spe}", {"jit_compile": "auto", "steps_per_execution": 512},
                                   512, 30.0))
    assert ("holds here: steps_per_execution 512 (the steps a call ran not recorded: Keras ends a call at the "
            "epoch's end) trains 2.00x as fast as 1 (median over 1 pairs whose other Keras knobs in effect, "
            "`settings.*`, are the same)") in both_auto
    not_taken = finding(_keras_row("default", {}, 1, 60.0), _keras_row(spe, {"steps_per_execution": 512}, 1, 40.0))
    assert "no ok pair of runs to judge" in not_taken
    other_jit = finding(_keras_row("default", {}, 1, 60.0, jit=False),
                        _keras_row(spe, {"steps_per_execution": 512}, 512, 30.0))
    assert "no ok pair of runs to judge" in other_jit
    unrecorded = _keras_row(spe, {"steps_per_execution": 512}, None, 30.0)
    assert "no ok pair of runs to judge" in finding(_keras_row("default", {}, 1, 60.0), unrecorded)


def test_report_pairs_published_times_only_with_runs_of_the_studys_settings(tmp_path):
    """A row with a published counterpart (same stack and knobs) gets the study's time only when it also ran the
    study's model, data, batch, epochs, cadence and tf.data buffer; the section says which were left out, why."""
    recs = [
        fake_record("keras3-tf", "jit_compile=false", {"jit_compile": False}, 65.0),
        fake_record("keras3-tf", "data_pipeline=tf_data_numpy+jit_compile=false",
                    {"data_pipeline": "tf_data_numpy", "jit_compile": False}, 70.0, batch=128),
        fake_record("pytorch", "data_pipeline=tensor_dataset", {"data_pipeline": "tensor_dataset"}, 30.0,
                    workload="mnist_cnn"),
    ]
    run = tmp_path / "run"
    for c, r in recs:
        write_json_atomic(result_path(run, c), r)
    collect(run, tmp_path / "run.csv")
    text = report.write_report(report.load_runs([tmp_path / "run.csv"])[0], tmp_path / "out").read_text()
    assert has_cells(text, ["keras3-tf", "jit_compile=false", "ok", "65.0", "65.5"])  # the study's settings: paired
    assert has_cells(text, ["keras3-tf", "data_pipeline=tf_data_numpy+jit_compile=false", "ok", "70.0",
                            "n/a"])  # batch 128
    assert has_cells(text, ["pytorch", "data_pipeline=tensor_dataset", "ok", "30.0", "n/a"])  # the 2017 CNN
    assert "Reference times are paired only with rows that ran the study's settings" in text
    assert "2 row(s) with a published counterpart are not paired: " in text
    assert "workload=mnist_cnn (1)" in text and "batch_size=128 (1)" in text


def test_study_mismatch_checks_every_setting_and_treats_unrecorded_as_different():
    from bench.results.report.tuning import STUDY, study_mismatch

    good = {**STUDY, "settings.data_pipeline": "tf_data_numpy", "settings.shuffle_buffer": 20000.0,
            "batch_size": 256.0, "data.n_train": 60000.0, "metrics.epochs": 41.0}
    assert study_mismatch(pd.Series(good)) is None
    assert study_mismatch(pd.Series({**good, "settings.shuffle_buffer": 60000.0})) == "settings.shuffle_buffer=60000"
    assert study_mismatch(pd.Series({**good, "settings.sync": "step"})) == "settings.sync=step"
    assert study_mismatch(pd.Series({**good, "device": "cpu"})) == "device=cpu"
    assert study_mismatch(pd.Series({k: v for k, v in good.items() if k != "metrics.epochs"})) == \
        "metrics.epochs=not recorded"


def test_study_pairs_a_pytorch_loader_row_only_with_pytorchs_default_loader_options():
    """The post ran its tensor datasets with PyTorch's standard DataLoader options (pin_memory, persistent_workers
    False), and the torchvision rows are paired under the same options, assumed (the post does not state theirs); a
    row that pinned or kept its workers, or that does not say (records from before the options were recorded), is
    not the study's run."""
    from bench.results.report.tuning import STUDY, study_mismatch

    good = {**STUDY, "settings.data_pipeline": "torchvision_dataset_transforms", "batch_size": 256.0,
            "data.n_train": 60000.0, "metrics.epochs": 41.0, "settings.pin_memory": False,
            "settings.persistent_workers": False}
    assert study_mismatch(pd.Series(good)) is None
    assert study_mismatch(pd.Series({**good, "settings.pin_memory": True})) == "settings.pin_memory=True"
    assert study_mismatch(pd.Series({k: v for k, v in good.items() if k != "settings.persistent_workers"})) == \
        "settings.persistent_workers=not recorded"


def _table_rows(path) -> list[list[str]]:
    """The cells of every Markdown table row of ``path`` (header and rule rows too)."""
    text = (Path(__file__).resolve().parents[2] / path).read_text(encoding="utf-8")
    return [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in text.splitlines()
            if line.startswith("| ")]


def test_torchvision_loader_options_are_assumed_where_the_post_states_them_for_tensor_datasets_only():
    """The post's words on its loader ("tensor-datasets ... and a respective dataloader (with standard parameters and
    num_workers = 0)") cover its tensor datasets only: the torchvision rows (0 and 6 workers) run PyTorch's default
    pin_memory / persistent_workers as our assumption. The method tables and the report's pairing note say so; they
    had relabelled the torchvision rows "same"."""
    from bench.core.reference import tuning_study
    from bench.results.report.tuning import STUDY_LOADER_PIPELINES, pairing_note

    assert tuning_study.LOADER_STATED_FOR == ("tensor_dataset",)
    assert set(tuning_study.LOADER_STATED_FOR) < set(STUDY_LOADER_PIPELINES)
    note = pairing_note(pd.DataFrame({"reference_mismatch": [None]}))
    assert ("PyTorch DataLoader pin_memory=False, persistent_workers=False: the post's standard parameters for "
            "tensor_dataset, assumed (PyTorch's defaults) for torchvision_dataset_transforms") in note
    for path in ("docs/suites/tuning.md", "README.md"):
        torchvision = [r for r in _table_rows(path) if "torchvision" in r[0]]
        assert torchvision, path
        for row in torchvision:
            assert "loader options assumed (PyTorch's defaults" in row[3], (path, row[0])
    loader = next(r for r in _table_rows("docs/suites/tuning.md") if r[0] == "PyTorch `DataLoader` options")
    assert loader[3] == "same for `tensor_dataset`; the torchvision rows: assumed (PyTorch's defaults)"


def test_report_cli_rejects_a_non_bench_csv(tmp_path, capsys):
    f = tmp_path / "x.csv"
    f.write_text("a,b\n1,2\n")
    with pytest.raises(SystemExit) as e:
        main(["report", str(f)])
    assert e.value.code == 2 and "not a bench CSV" in capsys.readouterr().err


def test_reference_rows_parse():
    row = next(csv.DictReader(io.StringIO(
        "stack,data_pipeline,num_workers,steps_per_execution,jit,precision,grad_scaler,matmul_precision,time_s,"
        "time_preload_s,gpu_util_pct,power_w\npytorch,tensor_dataset,0,,none,float32,,,38,35,99,138\n")))
    pairs = report_tuning.reference_settings(row)
    assert pairs == [({"data_pipeline": "tensor_dataset"}, 38.0),
                     ({"data_pipeline": "tensor_dataset", "preload": True}, 35.0)]


# ---- report: the Keras 3 benchmark's Table 2 ---------------------------------------------------------

def test_report_renders_table2_with_published_values_and_every_status(tmp_path):
    recs = [
        paper_record("keras2-tf", "bert", "fit", 32, 400.0),
        paper_record("keras3-tf", "bert", "fit", 32, 200.0),
        paper_record("keras3-jax", "bert", "fit", 32, 100.0, mfu=0.25),
        paper_record("keras3-torch", "bert", "fit", 32, status="failed", reason="RuntimeError: boom"),
        paper_record("pytorch", "bert", "fit", 32, 150.0),
        paper_record("keras2-tf", "gemma", "generate", 1, status="unsupported",
                     reason="GemmaBackbone requires Keras 3"),
        paper_record("keras3-jax", "gemma", "generate", 1, status="oom", reason="killed by SIGKILL"),
    ]
    run = tmp_path / "run"
    for c, r in recs:
        write_json_atomic(result_path(run, c), r)
    collect(run, tmp_path / "run.csv")
    text = report.write_report(report.load_runs([tmp_path / "run.csv"])[0], tmp_path / "out").read_text()
    assert "## Keras 3 benchmark (Table 2 layout)" in text
    # published bert fit 32: keras2 486.00, keras3 TF 214.49, JAX 222.37, torch 808.68; best 214.49
    row = " | ".join(rows_starting(text, "bert", "fit", "32")[0])
    assert "400.00 / 486.00 (0.82x)" in row and "200.00 / 214.49 (0.93x)" in row
    assert "**100.00** / 222.37 (0.45x)" in row  # our fastest Keras 3 stack in bold
    assert "failed [^" in row and "/ 808.68" in row
    assert row.endswith(" | 100.00 / 214.49 | 150.00")  # Keras 3 best, then plain PyTorch
    gemma = " | ".join(rows_starting(text, "gemma", "generate", "1")[0])
    assert "unsupported [^" in gemma and "/ NA" in gemma and "oom [^" in gemma and "not run" in gemma
    assert "GemmaBackbone requires Keras 3" in text and "RuntimeError: boom" in text
    # throughput and MFU table: 32 examples / 100 ms = 320 examples/s at 25 % MFU on keras3-jax
    rate = rows_starting(text, "bert", "fit", "32")[1]
    assert any("320.0/s, MFU 25.0 %" in c for c in rate) and "160.0/s" in rate
    # every published row is in the table, run or not
    assert len(table_rows(text)) >= 12
    plots = tmp_path / "out" / "plots" / "run"
    assert (plots / "paper_speedup.png").exists() and (plots / "paper_ms_per_step.png").exists()


def test_report_of_a_directory_has_one_section_per_run(tmp_path, capsys):
    """`make report` passes results/: every bench CSV there becomes a section of one report.md, with
    footnote labels kept apart per run; a CSV that is not a bench CSV is skipped with a warning."""
    results = tmp_path / "results"
    for run, recs in (("classic-full-gpu", [paper_record("pytorch", "bert", "fit", 32, status="failed",
                                                         reason="CUDA out of memory")]),
                      ("paper-full-gpu", [paper_record("keras3-jax", "bert", "fit", 32, 100.0),
                                          paper_record("keras2-tf", "gemma", "generate", 1, status="unsupported",
                                                       reason="GemmaBackbone requires Keras 3")])):
        for c, r in recs:
            write_json_atomic(result_path(tmp_path / "runs" / run, c), r)
        collect(tmp_path / "runs" / run, results / f"{run}.csv")
    (results / "compare.csv").write_text("cell,ratio\nx,1.0\n")
    main_ok(["report", str(results)])
    captured = capsys.readouterr()
    assert "warning: skipped" in captured.err and "compare.csv" in captured.err
    text = (results / "report.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "# Benchmark report"
    assert "- [classic-full-gpu](#run-classic-full-gpu): 1 cells, 0 ok" in lines
    assert lines.index("## Run classic-full-gpu") < lines.index("## Run paper-full-gpu")
    assert "- Run date (UTC): 2026-11-21; cells ran from 10:00:00 to 2026-11-21 10:00:00 (0.0 min" in text
    assert "### Keras 3 benchmark (Table 2 layout)" in lines and "## Keras 3 benchmark (Table 2 layout)" not in lines
    assert "failed [^classic-full-gpu-1]" in text and "[^classic-full-gpu-1]: pytorch bert" in text
    assert "unsupported [^paper-full-gpu-1]" in text and "[^paper-full-gpu-1]: keras2-tf gemma" in text
    assert "(plots/paper-full-gpu/paper_ms_per_step.png)" in text
    assert (results / "plots" / "paper-full-gpu" / "paper_ms_per_step.png").exists()


def test_report_cli_fails_cleanly_without_any_bench_csv(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["report", str(tmp_path)])
    assert e.value.code == 2 and "no bench CSV" in capsys.readouterr().err


def main_ok(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0


def test_published_table_is_complete():
    pub = report_paper.published_ms()
    assert len(pub) == 48
    assert pub[("gemma", "fit", 8, "keras2-tf")] is None  # NA in the source
    assert pub[("mistral", "generate", 1, "keras3-jax")] == 679.30


def test_the_steps_per_execution_finding_says_what_a_512_call_ran():
    """Keras ends an execution at the epoch's end: the study's 512 at batch 256 on 60,000 images (235 steps an epoch)
    ran one call of 235 steps per epoch. The finding said "steps_per_execution 512 in effect"; it now names the steps
    each call ran, from the record's settings.steps_per_call."""
    spe = "steps_per_execution=512"
    rows = pd.DataFrame([_keras_row("default", {}, 1, 60.0, per_call=1),
                         _keras_row(spe, {"steps_per_execution": 512}, 512, 30.0, per_call=235)])
    line = report_tuning.findings(rows)[0]
    assert "512 in effect" not in line
    assert ("steps_per_execution 512 (235 steps a call: Keras ends a call at the epoch's end) trains 2.00x as fast "
            "as 1") in line
    big_epoch = rows.assign(**{"settings.steps_per_call": [1, 512]})  # an epoch of 512 steps or more
    assert "steps_per_execution 512 (512 steps a call) trains" in report_tuning.findings(big_epoch)[0]


def test_the_steps_per_execution_speed_up_never_prints_on_the_other_side_of_its_1_1_from_the_verdict():
    """A median of 1.1004 "holds" (above 1.1) but printed as 1.10x, which is not above 1.1: the number shown beside
    a verdict is now on the verdict's side of the edge, with the digits that takes."""
    def finding(slow):
        return report_tuning.findings(pd.DataFrame([
            _keras_row("default", {}, 1, slow),
            _keras_row("steps_per_execution=512", {"steps_per_execution": 512}, 512, 50.0)]))[0]

    assert "holds here" in finding(55.02) and "trains 1.1004x as fast" in finding(55.02)
    assert "does not hold here" in finding(55.0) and "trains 1.10x as fast" in finding(55.0)  # 1.1 is not above
    assert "does not hold here" in finding(54.99) and "trains 1.10x as fast" in finding(54.99)
    assert "holds here" in finding(60.0) and "trains 1.20x as fast" in finding(60.0)
