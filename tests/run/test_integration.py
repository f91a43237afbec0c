"""Real cells through the real runner and worker, on the frameworks installed here (CPU)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import needs_keras_torch, needs_torch


def bench_run(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "bench", "run", "--device", "cpu", "--out", str(tmp_path),
                           *args], capture_output=True, text=True, timeout=600)


def check_ok(path, stack):
    rec = json.loads(path.read_text())
    assert rec["status"] == "ok", rec.get("reason")
    m = rec["metrics"]
    assert m["epochs"] == 2 and m["first_epoch_s"] > 0 and m["steady_epoch_s"] > 0
    # default cadence: barrier + clock at epoch edges only; one steady epoch has no spread to report
    assert rec["settings"]["sync"] == m["sync"] == "epoch" and m["barriers"] == m["clock_reads"] == 4
    assert m["ms_per_step_basis"] == "epoch" and m["ms_per_step_p50"] is None and m["first_step_s"] is None
    assert m["ms_per_step_mean"] == pytest.approx(1000 * m["steady_epoch_s"] / m["steps_per_epoch"])
    assert m["samples_per_s"] > 0
    assert len(rec["history"]["loss"]) == 2 and len(rec["history"]["val_accuracy"]) == 2
    assert rec["device"] == "cpu" and any("CPU run" in n for n in rec["notes"])
    assert rec["data"]["source"] == "synthetic" and rec["data"]["reason"]
    env = rec["env"]
    assert env["python"] and env["packages"]["torch"] and env["cpu_model"] and env["host"]
    assert env["gpu"]["available"] is False and env["gpu"]["reason"]
    assert rec["memory"]["host_peak_rss_bytes"] > 10 * 2**20
    assert rec["settings"]["torch_matmul_allow_tf32"] is False
    tel = rec["telemetry"]  # no GPU: every GPU field null with the reason, process CPU still measured
    assert tel["available"] is False and tel["reason"] == "CPU run: no GPU telemetry"
    assert tel["energy_j"] is None and tel["cpu_util_pct"] > 0
    assert m["j_per_step"] is None and m["total_train_s"] >= m["first_epoch_s"]
    assert rec["repeats"]["n"] == 1 and rec["repeats"]["ms_per_step_mean"]["values"] == [m["ms_per_step_mean"]]
    # the 2017 metric: the whole training call (validation included) over the epochs, beside ms/step
    assert m["fit_call_s"] > m["total_train_s"] and m["fit_call_s_per_epoch"] == pytest.approx(m["fit_call_s"] / 2)
    assert rec["repeats"]["fit_call_s_per_epoch"]["values"] == [m["fit_call_s_per_epoch"]]
    assert m["fit_epoch_s_mean"] == pytest.approx(sum(m["fit_epoch_s"]) / 2) and rec["schema_version"] == 4
    assert rec["settings"]["optimizer"]["name"] and rec["settings"]["loss"]
    return rec


@needs_torch
def test_pytorch_cell(tmp_path):
    p = bench_run(tmp_path, "--stack", "pytorch", "--workload", "mnist_cnn")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "CPU MODE" in p.stderr
    rec = check_ok(tmp_path / "pytorch" / "pytorch__classic__mnist_cnn__fit__smoke__default.json", "pytorch")
    # the 2017 script's CNN and optimizer; smoke size: the smoke batch (8), 16 steps per epoch, the full model
    assert rec["model"]["params_total"] == 1_199_882 and rec["batch_size"] == 8
    assert rec["metrics"]["steps_per_epoch"] == 16
    assert rec["settings"]["optimizer"] == {"name": "Adadelta", "learning_rate": 1.0, "rho": 0.95, "eps": 1e-8,
                                            "weight_decay": 0.0, "lr_schedule": None}
    assert rec["settings"]["augment"] is False and "augmentation" not in rec["settings"]
    again = bench_run(tmp_path, "--stack", "pytorch", "--workload", "mnist_cnn")
    assert "already ok, skipped" in again.stdout


@needs_torch
def test_pytorch_cifar10_cell_augments_on_the_host_with_one_worker(tmp_path):
    """cifar10_cnn's default is its 2017 script's: real-time augmentation by one background worker (a DataLoader
    worker process), rmsprop(lr=0.0001, decay=1e-6), n // batch steps; --no-augment is the variant without it."""
    p = bench_run(tmp_path, "--stack", "pytorch", "--workload", "cifar10_cnn", "--batch-size", "128")
    assert p.returncode == 0, p.stdout + p.stderr
    rec = check_ok(tmp_path / "pytorch" / "pytorch__classic__cifar10_cnn__fit__smoke__default__batch_size=128.json",
                   "pytorch")
    s = rec["settings"]
    assert s["augment"] is True and s["data_pipeline"] == "host_augmentation" and s["num_workers"] == 1
    assert s["augmentation"]["width_shift_range"] == 0.1 and s["augmentation"]["max_queue_size"] == 10
    assert s["train_data_placement"].startswith("host (DataLoader")
    assert s["optimizer"]["lr_schedule"]["decay"] == 1e-6 and s["optimizer"]["learning_rate"] == 1e-4
    assert rec["metrics"]["steps_per_epoch"] == 1024 // 128
    p = bench_run(tmp_path, "--stack", "pytorch", "--workload", "cifar10_cnn", "--batch-size", "128", "--no-augment")
    assert p.returncode == 0, p.stdout + p.stderr
    off = json.loads((tmp_path / "pytorch" / "pytorch__classic__cifar10_cnn__fit__smoke__augment=false__batch_size=128"
                                            ".json").read_text())
    assert off["settings"]["augment"] is False and off["settings"]["data_pipeline"] == "tensors_on_device"
    assert off["settings_requested"] == {"augment": False}


@needs_keras_torch
def test_keras3_torch_cell(tmp_path):
    """A Keras 3 cell on PyTorch with its batch size overridden. The MLP: babi_rnn's LSTM, stepped in Python on
    this backend, took 150 s here (the Docker e2e and the GPU window's rehearsal run it on keras3-torch)."""
    p = bench_run(tmp_path, "--stack", "keras3-torch", "--workload", "mnist_mlp", "--batch-size", "64")
    assert p.returncode == 0, p.stdout + p.stderr
    rec = check_ok(tmp_path / "keras3-torch" / "keras3-torch__classic__mnist_mlp__fit__smoke__default__batch_size=64"
                                     ".json", "keras3-torch")
    assert rec["batch_size"] == 64
    assert rec["settings"]["keras_backend"] == "torch" and rec["settings"]["jit_compile"] is False
    assert rec["env"]["env_vars"]["KERAS_BACKEND"] == "torch"


@pytest.mark.skipif(sys.platform != "linux", reason="linux only")
def test_missing_framework_is_a_failed_record_not_a_crash(tmp_path):
    # keras2-tf needs tf_keras, absent from the test environment: the cell fails with a reason.
    try:
        import tf_keras  # noqa: F401
        pytest.skip("tf_keras is installed here")
    except ImportError:
        pass
    p = bench_run(tmp_path, "--stack", "keras2-tf", "--workload", "mnist_mlp")
    assert p.returncode == 1
    rec = json.loads((tmp_path / "keras2-tf" / "keras2-tf__classic__mnist_mlp__fit__smoke__default.json").read_text())
    assert rec["status"] == "failed" and "tf_keras" in rec["reason"]
    assert "1 cell(s) did not succeed" in p.stderr


@needs_torch
@pytest.mark.parametrize("stack", [pytest.param("pytorch", marks=pytest.mark.cover),
                                   pytest.param("keras3-torch", marks=needs_keras_torch)])
def test_every_cadence_trains_the_same_model_and_syncs_as_often_as_it_says(tmp_path, stack):
    """The cadence changes only where the timer waits for the device: same seed, same losses."""
    for sync in ("step", "every:3", "epoch"):
        p = bench_run(tmp_path, "--stack", stack, "--workload", "mnist_mlp", "--sync", sync)
        assert p.returncode == 0, p.stdout + p.stderr
    recs = {r["settings"]["sync"]: r for r in map(json.loads, map(Path.read_text, (tmp_path / stack).glob("*.json")))}
    assert sorted(recs) == ["epoch", "every:3", "step"]
    steps = recs["epoch"]["metrics"]["steps_per_epoch"]
    assert steps == 8  # 1024 smoke samples in batches of 128
    windows = {"step": steps, "every:3": -(-steps // 3), "epoch": 1}
    for sync, rec in recs.items():
        m = rec["metrics"]
        assert rec["status"] == "ok" and m["sync"] == sync and m["steps_per_epoch"] == steps
        assert m["clock_reads"] == 2 * (1 + windows[sync])  # 2 epochs: begin + one read per window
        assert m["executions"] == windows[sync]  # the steady epoch's intervals
        # validation is computed the same way under every cadence: bit for bit the same model
        assert rec["history"]["val_loss"] == recs["step"]["history"]["val_loss"]
        assert rec["history"]["accuracy"] == recs["step"]["history"]["accuracy"]
        # the train loss is summed in float32 on the device, or in Python floats under sync=step
        assert rec["history"]["loss"] == pytest.approx(recs["step"]["history"]["loss"], rel=1e-6)
    assert recs["step"]["metrics"]["ms_per_step_basis"] == "step"
    assert recs["every:3"]["metrics"]["ms_per_step_basis"] == "window"
    assert recs["step"]["variant"] == "sync-step" and recs["epoch"]["variant"] == "default"


@needs_keras_torch
def test_epoch_cadence_leaves_keras_its_asynchronous_batch_path():
    """No batch hook under sync=epoch, so Keras 3 dispatches batch-end work to its thread pool and does not
    wait for the device after each step; any other cadence hooks the batch end (Keras then reads its logs)."""
    import keras
    from keras.src.callbacks.callback_list import CallbackList

    from bench.instruments.timing import EPOCH, Cadence, EpochTimer
    from bench.models.engines.keras.runtime import make_timing_callback

    for cadence, async_train in ((EPOCH, True), (Cadence.parse("every:4"), False), (Cadence.parse("step"), False)):
        cb = make_timing_callback(keras, EpochTimer(lambda: None, cadence=cadence))
        assert CallbackList([cb], model=keras.Sequential())._async_train is async_train, cadence


SEED_WITHOUT_TF = """
import os, sys
os.environ["KERAS_BACKEND"] = "torch"
import keras
from bench.models.engines.keras.runtime import set_random_seed
print("SEEDED", set_random_seed(keras, 7), "tensorflow" in sys.modules)
from keras.src.utils import module_utils
import tensorflow as tf
from tensorflow.python.framework import random_seed
print("TF", random_seed.get_seed(None)[0], module_utils.tensorflow.available)
"""


@needs_keras_torch
def test_keras3_torch_seeds_without_importing_tensorflow():
    """Keras' set_random_seed imports TensorFlow (~3 s) to seed it; on the torch backend the cell leaves it
    unloaded, and TF gets the seed when a tf.data pipeline imports it."""
    pytest.importorskip("tensorflow")
    p = subprocess.run([sys.executable, "-c", SEED_WITHOUT_TF], capture_output=True, text=True, timeout=300)
    assert "SEEDED False False" in p.stdout, p.stdout + p.stderr
    assert "TF 7 True" in p.stdout, p.stdout + p.stderr
