"""The math mode (TF32) of every cell: the sources' method by default, strict FP32 and TF32-everywhere as
variants, what took effect recorded per framework for matmuls and convolutions, and MFU against the peak of the
math in effect. The frameworks' own switches are read on the CPU with the real libraries."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core import knobs
from bench.core.families.torch import TorchEpochSettings
from bench.core.settings import SettingsError
from bench.models import flops
from bench.models.engines.math_mode import tf32_math
from bench.results.schema import Record
from tests.conftest import needs_torch

ROOT = Path(__file__).resolve().parents[3]


def test_every_engine_defaults_to_each_frameworks_shipped_math_mode():
    """The sources set no TF32 override and no framework switch: keras-benchmarks v0.0.5 ``shell/run.sh`` (the
    Keras 3 benchmark page's code; NVIDIA_TF32_OVERRIDE first appears in v0.0.6, commit f9792f0), the Keras 2.0.8
    ``examples/*.py`` (the 2017 comparison), and the tuning study, which changed only PyTorch's
    ``set_float32_matmul_precision`` in some rows (its ``tf32=on`` rows here)."""
    for cls in knobs.SETTINGS.values():
        assert cls().tf32 == "default", cls.__name__
        assert cls.allowed()["tf32"] == ("default", "on", "off")
    # the knob PyTorch's float32_matmul_precision was is gone: it and allow_tf32 are one switch in torch 2.13
    assert "matmul_precision" not in TorchEpochSettings.allowed()


@pytest.mark.parametrize("settings, override", [
    ({}, None),                   # the sources' method: no override, whatever the caller's shell held
    ({"tf32": "default"}, None),
    ({"tf32": "on"}, None),
    ({"tf32": "off"}, "0"),       # strict FP32: cuBLAS and cuDNN never use TF32, whatever a framework switch says
])
def test_the_override_is_set_only_for_strict_fp32(monkeypatch, settings, override):
    from bench.core.stacks import get_stack
    from bench.run.runner import cell_env

    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")  # e.g. left in a user's shell
    env = cell_env(get_stack("keras3-jax"), "gpu", settings)
    assert env.get("NVIDIA_TF32_OVERRIDE") == override


def test_compose_leaves_the_tf32_override_to_the_runner():
    import yaml

    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    for name, service in compose["services"].items():
        assert "NVIDIA_TF32_OVERRIDE" not in (service.get("environment") or {}), name


SWITCHES_CODE = """
import json, sys
from bench.models.engines import frameworks, math_mode
backend = sys.argv[1]
frameworks.import_backend(backend)
out = {}
for mode in ("default", "on", "off", "default"):
    out.setdefault(mode, []).append(math_mode.set_tf32(backend, mode))
print("SWITCHES" + json.dumps(out))
"""


def needs(module: str) -> None:
    """Skip without ``module``, without importing it here (TensorFlow beside CUDA torch in one process crashes)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


def switches(backend: str) -> dict:
    """``set_tf32`` for default, on, off, then default again, in a fresh process (the switches are global state)."""
    import os

    # Keras' backend as the framework's own stack has it: TensorFlow imports Keras, and Keras on torch loads triton,
    # which segfaults in a process that loaded TensorFlow first
    env = {**os.environ, "KERAS_BACKEND": "tensorflow" if backend == "tensorflow" else backend}
    p = subprocess.run([sys.executable, "-c", SWITCHES_CODE, backend], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env=env)
    line = next((x for x in p.stdout.splitlines() if x.startswith("SWITCHES")), None)
    assert line, p.stderr[-3000:]
    return json.loads(line[len("SWITCHES"):])


@needs_torch
def test_torch_default_leaves_matmul_fp32_and_cudnn_tf32_and_on_off_set_both():
    """torch 2.13's own defaults: float32 matmuls without TF32 (precision 'highest'), cuDNN convolutions with it."""
    s = switches("torch")
    default, on, off, again = s["default"][0], s["on"][0], s["off"][0], s["default"][1]
    assert default == {"NVIDIA_TF32_OVERRIDE": None, "torch_matmul_allow_tf32": False,
                       "torch_cudnn_allow_tf32": True, "torch_float32_matmul_precision": "highest",
                       "torch_matmul_fp32_precision": "none", "torch_cudnn_conv_fp32_precision": "tf32",
                       "torch_cudnn_rnn_fp32_precision": "tf32", "torch_cudnn_fp32_precision": "none"}
    assert on["torch_matmul_allow_tf32"] is True and on["torch_cudnn_allow_tf32"] is True
    assert on["torch_float32_matmul_precision"] == "high"  # the tuning study's set_float32_matmul_precision("high")
    assert off["torch_matmul_allow_tf32"] is False and off["torch_cudnn_allow_tf32"] is False
    assert again == off  # default changes nothing: it only reads
    # plain PyTorch's nn.LSTM is cuDNN's kernel (TF32); keras3-torch's 2017 LSTMs are torch matmuls (FP32)
    assert tf32_math(default, "gpu", rnn_cudnn=True) == {"matmul": False, "conv": True, "rnn": True}
    assert tf32_math(default, "gpu", rnn_cudnn=False) == {"matmul": False, "conv": True, "rnn": False}
    assert tf32_math(on, "gpu", rnn_cudnn=False)["rnn"] is True


@needs_torch
def test_torch_on_and_off_set_every_fp32_precision_switch_inductor_reads():
    """torch 2.13's legacy switches leave the cuDNN-wide fp32_precision at 'none', and inductor's Triton convolution
    kernels take ALLOW_TF32 from it (torch/_inductor/kernel/conv.py): tf32=on must set it to 'tf32' (else a
    max-autotune Triton convolution runs FP32 while the record says tf32_conv), tf32=off to 'ieee', together with
    the per-op switches, while the legacy switches stay readable and agree."""
    s = switches("torch")
    on, off = s["on"][0], s["off"][0]
    keys = ("torch_matmul_fp32_precision", "torch_cudnn_conv_fp32_precision", "torch_cudnn_rnn_fp32_precision",
            "torch_cudnn_fp32_precision")
    assert [on[k] for k in keys] == ["tf32"] * 4
    assert [off[k] for k in keys] == ["ieee"] * 4
    assert on["torch_matmul_allow_tf32"] is True and off["torch_cudnn_allow_tf32"] is False  # no "mix of APIs" error
    # what the record says for a non-compiled cell is unchanged: the per-op keys agree with the legacy ones
    legacy = {k: v for k, v in on.items() if not k.endswith("fp32_precision")}
    assert tf32_math(on, "gpu", rnn_cudnn=True) == tf32_math(legacy, "gpu", rnn_cudnn=True)
    legacy = {k: v for k, v in off.items() if not k.endswith("fp32_precision")}
    assert tf32_math(off, "gpu", rnn_cudnn=True) == tf32_math(legacy, "gpu", rnn_cudnn=True)


NEW_API_ONLY_CODE = """
import json, torch
from bench.models.engines import math_mode
torch.backends.cuda.matmul.fp32_precision = "ieee"  # a library that used only torch's new API
torch.backends.cudnn.conv.fp32_precision = "ieee"
torch.backends.cudnn.rnn.fp32_precision = "ieee"
print("STATE" + json.dumps(math_mode.tf32_state("torch")))
"""


@needs_torch
def test_torch_switches_are_read_when_a_library_mixed_the_legacy_and_new_apis():
    """torch refuses to read cudnn.allow_tf32 after the new API set it apart from the legacy flag: the legacy key is
    then None and the per-op fp32_precision keys still say FP32, instead of the cell failing."""
    import os

    p = subprocess.run([sys.executable, "-c", NEW_API_ONLY_CODE], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = next((x for x in p.stdout.splitlines() if x.startswith("STATE")), None)
    assert line, p.stderr[-3000:]
    state = json.loads(line[len("STATE"):])
    assert state["torch_cudnn_allow_tf32"] is None and state["torch_cudnn_conv_fp32_precision"] == "ieee"
    assert tf32_math(state, "gpu", rnn_cudnn=True) == {"matmul": False, "conv": False, "rnn": False}


def test_jax_default_is_its_default_precision_which_uses_tf32_on_a_gpu():
    needs("jax")
    s = switches("jax")
    assert s["default"][0]["jax_default_matmul_precision"] is None
    assert s["on"][0]["jax_default_matmul_precision"] == "tensorfloat32"
    assert s["off"][0]["jax_default_matmul_precision"] == "highest"
    assert tf32_math(s["default"][0], "gpu", rnn_cudnn=False) == {"matmul": True, "conv": True, "rnn": True}
    assert tf32_math(s["off"][0], "gpu", rnn_cudnn=False) == {"matmul": False, "conv": False, "rnn": False}


def test_tensorflow_default_has_tf32_on():
    needs("tensorflow")
    s = switches("tensorflow")
    assert s["default"][0]["tf_tensor_float_32_execution"] is True
    assert s["off"][0]["tf_tensor_float_32_execution"] is False
    assert tf32_math(s["default"][0], "gpu", rnn_cudnn=False) == {"matmul": True, "conv": True, "rnn": True}


@pytest.mark.parametrize("effective, device, rnn_cudnn, expected", [
    ({"tf_tensor_float_32_execution": True}, "gpu", False, (True, True, True)),
    ({"tf_tensor_float_32_execution": True, "NVIDIA_TF32_OVERRIDE": "0"}, "gpu", False, (False,) * 3),  # override
    ({"jax_default_matmul_precision": None}, "gpu", False, (True, True, True)),
    ({"jax_default_matmul_precision": "highest"}, "gpu", False, (False, False, False)),
    # torch's default: matmuls FP32; cuDNN convolutions and RNN kernels (plain PyTorch's nn.LSTM) TF32
    ({"torch_matmul_allow_tf32": False, "torch_cudnn_allow_tf32": True}, "gpu", True, (False, True, True)),
    # ... but keras3-torch's 2017 LSTMs are no cuDNN kernel: torch matmuls, FP32 (the audit: it said TF32)
    ({"torch_matmul_allow_tf32": False, "torch_cudnn_allow_tf32": True}, "gpu", False, (False, True, False)),
    ({"torch_matmul_allow_tf32": True, "torch_cudnn_allow_tf32": False}, "gpu", False, (True, False, True)),
    ({"torch_matmul_allow_tf32": True, "torch_cudnn_allow_tf32": True}, "gpu", True, (True, True, True)),
    ({"tf_tensor_float_32_execution": True}, "cpu", False, (False, False, False)),  # a tensor-core mode: no CPU
    ({}, "gpu", False, (False, False, False)),  # no switch recorded: not claimed
])
def test_tf32_in_effect_per_op_kind(effective, device, rnn_cudnn, expected):
    assert tuple(tf32_math(effective, device, rnn_cudnn=rnn_cudnn).values()) == expected


CUDNN_OK_CODE = """
import json
import keras
from bench.models.workloads.common import lstm_2017
backend = keras.backend.backend()
rnn = __import__(f"keras.src.backend.{backend}.rnn", fromlist=["rnn"])
# the library's own rule with the GPU faked present: only the layer's arguments decide
setattr(rnn, "_is_cuda_cudnn_available" if backend == "torch" else "_is_gpu_available", lambda: True)
out = {}
for name, layer in (("lstm_2017", lstm_2017(keras, 8)), ("sigmoid", keras.layers.LSTM(8))):
    c = layer.cell
    out[name] = bool(rnn.cudnn_ok(c.activation, c.recurrent_activation, layer.unroll, use_bias=c.use_bias))
print("CUDNN" + json.dumps(out))
"""


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_the_keras_stacks_2017_lstms_never_take_cudnn(backend):
    """``rnn_on_cudnn`` says no Keras stack's LSTM is a cuDNN kernel, so ``tf32_rnn`` follows the matmul switch there:
    keras 3.15.1's own ``cudnn_ok`` per backend, GPU faked present, refuses ``lstm_2017`` (hard_sigmoid) and takes a
    sigmoid LSTM (so the check can fail)."""
    import os

    from bench.models.engines.math_mode import rnn_on_cudnn

    needs(backend)
    env = {**os.environ, "KERAS_BACKEND": backend}
    p = subprocess.run([sys.executable, "-c", CUDNN_OK_CODE], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env=env)
    line = next((x for x in p.stdout.splitlines() if x.startswith("CUDNN")), None)
    assert line, p.stderr[-3000:]
    assert json.loads(line[len("CUDNN"):]) == {"lstm_2017": False, "sigmoid": True}
    for engine in ("keras", "jax"):
        assert rnn_on_cudnn(engine, "gpu") is False
    assert rnn_on_cudnn("torch", "cpu") is False


@needs_torch
def test_plain_pytorch_lstms_on_a_gpu_are_cudnn_kernels(monkeypatch):
    """nn.LSTM takes cuDNN while ``torch.backends.cudnn.enabled`` (torch's default) and cuDNN is there (faked: no
    GPU here); with cuDNN switched off its LSTMs would be matmuls."""
    import torch

    from bench.models.engines.math_mode import rnn_on_cudnn

    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    assert torch.backends.cudnn.enabled is True and rnn_on_cudnn("torch", "gpu") is True
    monkeypatch.setattr(torch.backends.cudnn, "enabled", False)
    assert rnn_on_cudnn("torch", "gpu") is False


@needs_torch
def test_a_torch_cell_records_the_switches_as_they_were_when_it_ended(tmp_path):
    """A fit cell with tf32=on ran with TF32 matmuls, and says so: the old engine set allow_tf32 and then its
    matmul_precision knob ('highest') switched it off again, while the record kept the first value."""
    from bench.run.plan import expand
    from bench.run.runner import run_one

    cell = expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"], settings={"tf32": "on"},
                  variant="tf32=on", epochs=1)[0]
    rec = run_one(cell, tmp_path).model_dump(exclude_unset=True)
    assert rec["status"] == "ok", rec.get("reason")
    s = rec["settings"]
    assert s["tf32"] == "on" and s["torch_float32_matmul_precision"] == "high"
    assert s["torch_matmul_allow_tf32"] is True and s["torch_cudnn_allow_tf32"] is True
    assert s["tf32_matmul"] is False and s["tf32_conv"] is False  # a CPU has no TF32
    assert s["NVIDIA_TF32_OVERRIDE"] is None


def test_mfu_divides_by_the_peak_of_the_math_in_effect():
    """Strict FP32 uses the FP32 peak, TF32 the TF32 one; PyTorch's default (FP32 matmuls, TF32 convolutions)
    the peak at which the cell's FLOPs take the least time, weighed by its share in convolutions."""
    from bench.run.worker import add_mfu

    def peak(settings, workload="stable_diffusion", task="fit"):
        r = Record.model_validate({
            "device": "gpu", "workload": workload, "task": task,
            "settings": {"precision": "float32", **settings,
                         **{f"tf32_{k}": v for k, v in tf32_math(settings, "gpu", rnn_cudnn=False).items()}},
            "env": {"gpu": {"name": "NVIDIA A100-SXM4-80GB"}},
            "metrics": {"flops_per_step": 1e12, "ms_per_step_mean": 100.0}})
        add_mfu(r)
        return r.metrics.peak_flops, r.metrics.peak_source

    assert peak({"NVIDIA_TF32_OVERRIDE": "0", "torch_matmul_allow_tf32": True})[0] == 19.5e12
    assert peak({"torch_matmul_allow_tf32": True, "torch_cudnn_allow_tf32": True})[0] == 156e12
    assert peak({"tf_tensor_float_32_execution": True})[0] == 156e12
    share = flops.conv_fraction("stable_diffusion", "fit")
    assert share is not None and 0.5 < share <= 1.0  # the SD VAE encoder is convolutions
    mixed, why = peak({"torch_matmul_allow_tf32": False, "torch_cudnn_allow_tf32": True})
    assert mixed == pytest.approx(1e12 / ((1 - share) / 19.5 + share / 156.0))
    assert "convolution" in why


def test_combined_peak_is_the_rate_of_the_least_time():
    assert flops.combined_peak(10.0, 100.0, 0.0) == 10.0
    assert flops.combined_peak(10.0, 100.0, 1.0) == 100.0
    # half the FLOPs at each: 0.5/10 + 0.5/100 = 0.055 s per FLOP-unit
    assert flops.combined_peak(10.0, 100.0, 0.5) == pytest.approx(1 / 0.055)
    with pytest.raises(ValueError):
        flops.combined_peak(10.0, 100.0, 1.5)
    peak, why = flops.peak_flops("NVIDIA A100-SXM4-80GB", "float32", False, True, None)
    assert peak is None and "not tabulated" in why


def test_strict_fp32_and_tf32_everywhere_are_variants_one_flag_away(tmp_path):
    """`bench run --set tf32=off` names the variant after the knob (the paper suite: per batch size)."""
    from bench.run import plan

    cells = plan.expand(["keras3-jax"], "paper", "smoke", "cpu", ["bert"], ["fit"], settings={"tf32": "off"},
                        variant="tf32=off")
    assert [c.variant for c in cells] == ["bs2-tf32=off"] and cells[0].settings == {"tf32": "off"}
    assert knobs.parse_assignment("tf32=off") == ("tf32", "off")
    assert knobs.parse_assignment("steps_per_execution=512") == ("steps_per_execution", 512)
    assert knobs.parse_assignment("preload=true") == ("preload", True)
    for bad, message in (("tf32=of", "not valid"), ("tf33=off", "unknown knob"), ("tf32", "KNOB=VALUE")):
        with pytest.raises(SettingsError, match=message):
            knobs.parse_assignment(bad)
    p = subprocess.run([sys.executable, "-m", "bench", "run", "--stack", "pytorch", "--set", "tf32=maybe",
                        "--device", "cpu", "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "tf32=maybe is not valid" in p.stderr


def test_the_tuning_studys_matmul_precision_high_rows_are_our_tf32_on_variants():
    from bench.results.report.tuning import reference_times

    torch_rows = {variant for stack, variant in reference_times() if stack == "pytorch"}
    assert any("tf32=on" in v for v in torch_rows)
    assert not any("matmul_precision" in v for v in torch_rows)


def test_the_convolution_share_in_the_table_matches_a_recount():
    needs("diffusers")
    total, share = flops.count_split("stable_diffusion", "fit")
    row = flops.read_table()[("stable_diffusion", "fit")]
    assert total == pytest.approx(row["flops_per_example"], rel=1e-4)
    assert share == pytest.approx(float(row["conv_fraction"]), abs=1e-4)
