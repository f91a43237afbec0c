"""Real cells through the real runner and worker, on the frameworks installed here (CPU)."""

import json
import subprocess
import sys

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
    assert 0 < m["ms_per_step_p50"] <= m["ms_per_step_p90"] <= m["ms_per_step_max"]
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
    return rec


@needs_torch
def test_pytorch_cell(tmp_path):
    p = bench_run(tmp_path, "--stack", "pytorch", "--workload", "mnist_cnn")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "CPU MODE" in p.stderr
    rec = check_ok(tmp_path / "pytorch" / "pytorch__classic__mnist_cnn__fit__smoke__default.json", "pytorch")
    # smoke size: the smoke batch (8), 4 steps per epoch; the model is the full one
    assert rec["model"]["params_total"] == 563_018 and rec["batch_size"] == 8
    assert rec["metrics"]["steps_per_epoch"] == 4
    again = bench_run(tmp_path, "--stack", "pytorch", "--workload", "mnist_cnn")
    assert "already ok, skipped" in again.stdout


@needs_keras_torch
def test_keras3_torch_cell(tmp_path):
    p = bench_run(tmp_path, "--stack", "keras3-torch", "--workload", "babi_rnn", "--batch-size", "64")
    assert p.returncode == 0, p.stdout + p.stderr
    rec = check_ok(tmp_path / "keras3-torch" / "keras3-torch__classic__babi_rnn__fit__smoke__default.json",
                   "keras3-torch")
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
