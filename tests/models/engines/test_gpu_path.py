"""The GPU path without a GPU: each test exercises the logic of a branch that only a GPU run takes
through fakes, the pinned libraries' documented behaviour, or CPU stand-ins."""

from __future__ import annotations

import re

import pytest

from bench.results.schema import Record
from tests.conftest import needs_keras_torch, needs_torch
from tests.helpers.cells import engine_cell
from tests.helpers.fake_nvml import two_gpu_pynvml


@needs_torch
def test_loader_shuffle_generator_is_on_the_cpu_for_a_cuda_device():
    """torch 2.13's RandomSampler draws on the CPU: a CUDA generator raises "Expected a 'cpu' device type
    for generator" (tensor_dataset + preload on a GPU). The loader's generator is a seeded CPU one."""
    import torch

    from bench.models.engines.torch.data import loader_kwargs

    kw = loader_kwargs(torch, 4, 0, torch.device("cuda"))
    assert kw["generator"].device.type == "cpu" and kw["shuffle"] is True
    ds = torch.utils.data.TensorDataset(torch.arange(10.0), torch.arange(10))
    first = [yb.tolist() for _, yb in torch.utils.data.DataLoader(ds, **kw)]
    cpu_kw = loader_kwargs(torch, 4, 0, torch.device("cpu"))
    again = [yb.tolist() for _, yb in torch.utils.data.DataLoader(ds, **cpu_kw)]
    assert sorted(sum(first, [])) == list(range(10)) and first == again  # shuffled, same seed on every device
    assert first != [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


@pytest.mark.parametrize("device, on_path, blocked", [
    ("gpu", [], "C compiler"),             # a slim image: Triton cannot build its launcher
    ("gpu", ["gcc"], None),
    ("gpu", ["cc"], "C compiler"),         # Triton looks for $CC, gcc or clang, not cc
    ("cpu", ["gcc"], "C++ compiler"),      # inductor's CPU kernels are C++
    ("cpu", ["g++"], None),
])
def test_torch_compile_toolchain_is_checked_on_every_device(tmp_path, monkeypatch, device, on_path, blocked):
    from bench.models.engines import Unsupported, toolchain

    for name in on_path:
        exe = tmp_path / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    reason = toolchain.torch_compile_blocker(device)
    assert (reason is None) if blocked is None else (blocked in reason)
    if blocked:
        with pytest.raises(Unsupported, match=f"compile=default: .*{re.escape(blocked)}"):
            toolchain.require_torch_compile(device, "compile=default")


def test_torch_compile_on_gpu_needs_python_headers(tmp_path, monkeypatch):
    import sysconfig

    from bench.models.engines import toolchain

    (tmp_path / "gcc").write_text("#!/bin/sh\n")
    (tmp_path / "gcc").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"include": str(tmp_path / "include")})
    assert "Python.h is missing" in toolchain.torch_compile_blocker("gpu")


def test_energy_window_excludes_validation():
    """Epochs of 4 s of training at 200 W, each followed by 3 s of validation at 400 W: energy and the
    window cover the steady epochs' training steps only (2 x 4 s x 200 W), as the time metrics do."""
    from tests.helpers.fake_nvml import FakeClock, make

    clock = FakeClock()
    tel = make(clock, watts=200.0)
    tel.measure_idle(1.0)
    for _ in range(3):
        tel.mark()
        for _ in range(8):
            clock.advance(0.5)
            tel.sample_once()
        tel.end_epoch()
        tel.nv.watts = 400.0  # validation
        for _ in range(6):
            clock.advance(0.5)
            tel.sample_once()
        clock.advance(0.1)  # the next epoch starts after the last validation sample
        tel.nv.watts = 200.0
    tel.stop()
    s = tel.summary(steps_per_epoch=10, examples_per_epoch=100)
    assert s["window_s"] == pytest.approx(8.0)
    assert s["energy_method"] == "counter" and s["energy_j"] == pytest.approx(1600.0, rel=1e-2)
    assert s["energy_integrated_j"] == pytest.approx(1600.0, rel=2e-2)
    assert s["energy_per_epoch_j"] == pytest.approx([800.0] * 3, rel=1e-2)
    assert s["j_per_step"] == pytest.approx(80.0, rel=1e-2)
    assert s["power_w"]["max"] == pytest.approx(200.0)  # no validation sample in the window


class Window:
    """Records the window protocol as the engines drive it."""

    def __init__(self, events):
        self.events = events

    def mark(self):
        self.events.append("mark")

    def end_epoch(self):
        self.events.append("end")

    def stop(self):
        self.events.append("stop")


@needs_torch
def test_torch_engine_closes_each_epoch_before_validation(monkeypatch):
    from bench.core.families.torch import TorchEpochSettings
    from bench.core.stacks import get_stack
    from bench.models import datasets
    from bench.models.engines.torch import epochs as torch_epochs
    from bench.models.workloads import get_workload

    events: list[str] = []
    real = torch_epochs._evaluate
    monkeypatch.setattr(torch_epochs, "_evaluate", lambda *a: (events.append("validate"), real(*a))[1])
    w = get_workload("mnist_mlp")
    ds = w.prepare(datasets.synthetic("mnist", 16, 8, "test"))
    torch_epochs.fit(get_stack("pytorch"), w, ds, engine_cell("pytorch", w, 2, 8), TorchEpochSettings(),
                     telemetry=Window(events))
    assert events == ["mark", "end", "validate", "mark", "end", "validate", "stop"]


@needs_torch
@pytest.mark.parametrize(("precision", "dtype"),
                         [("bfloat16_autocast", "torch.bfloat16"), ("float32", "torch.float32")])
def test_torch_engine_validates_under_the_training_steps_autocast(monkeypatch, precision, dtype):
    """A mixed-precision PyTorch cell validates in the dtype it trains in, as Keras' mixed_float16 policy and the
    Flax twin do: each validation forward's output has the autocast dtype (it was float32, outside autocast)."""
    from bench.core.families.torch import TorchEpochSettings
    from bench.core.stacks import get_stack
    from bench.models import datasets
    from bench.models.engines.torch import epochs as torch_epochs
    from bench.models.workloads import get_workload

    seen: set[str] = set()
    real = torch_epochs._evaluate

    def watched(torch, model, *rest):
        hook = model.register_forward_hook(lambda m, i, out: seen.add(str(out.dtype)))
        try:
            return real(torch, model, *rest)
        finally:
            hook.remove()

    monkeypatch.setattr(torch_epochs, "_evaluate", watched)
    w = get_workload("mnist_mlp")
    ds = w.prepare(datasets.synthetic("mnist", 16, 8, "test"))
    torch_epochs.fit(get_stack("pytorch"), w, ds, engine_cell("pytorch", w, 1, 8),
                     TorchEpochSettings(precision=precision))
    assert seen == {dtype}


@needs_torch
def test_torch_engine_validates_with_the_compiled_model_under_compile(monkeypatch):
    """Under ``compile`` the PyTorch cell validates through its ``torch.compile``'d model, as Keras' ``jit_compile``
    compiles its test function and the Flax twin jits its eval step: a graph is traced in evaluation (no grad).
    It validated with the uncompiled model: every graph traced was a training step's. The graphs run eagerly
    (a recording backend), so no C++ compiler is needed."""
    import torch

    from bench.core.families.torch import TorchEpochSettings
    from bench.core.stacks import get_stack
    from bench.models import datasets
    from bench.models.engines import toolchain
    from bench.models.engines.torch import epochs as torch_epochs
    from bench.models.workloads import get_workload

    traced: list[bool] = []  # whether grad was enabled, for each graph dynamo compiled

    def record(gm, example_inputs):
        traced.append(torch.is_grad_enabled())
        return gm.forward

    real = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, **kw: real(model, backend=record))
    monkeypatch.setattr(toolchain, "require_torch_compile", lambda *a: None)
    torch._dynamo.reset()
    w = get_workload("mnist_mlp")
    ds = w.prepare(datasets.synthetic("mnist", 16, 8, "test"))
    result = torch_epochs.fit(get_stack("pytorch"), w, ds, engine_cell("pytorch", w, 2, 8),
                              TorchEpochSettings(compile="default"))
    torch._dynamo.reset()
    assert True in traced  # the training step
    assert False in traced, traced  # the validation (torch.no_grad)
    assert len(result.history["val_loss"]) == 2


@needs_keras_torch
def test_keras_timing_callback_closes_the_epoch_when_validation_begins():
    """Keras' fit runs validation through evaluate() with the same callbacks, which calls on_test_begin."""
    import keras

    from bench.instruments.timing import EpochTimer
    from bench.models.engines.keras.runtime import make_timing_callback

    events: list[str] = []
    cb = make_timing_callback(keras, EpochTimer(lambda: None, Window(events)))
    cb.on_epoch_begin(0)
    cb.on_train_batch_begin(0)
    cb.on_train_batch_end(0)
    cb.on_test_begin()
    cb.on_epoch_end(0)  # after validation: already closed
    cb.on_epoch_begin(1)
    cb.on_train_batch_begin(0)
    cb.on_train_batch_end(0)
    cb.on_epoch_end(1)  # no validation data: closed here
    assert events == ["mark", "end", "mark", "end"]


def test_every_keras_stack_and_pipeline_has_a_placement_label():
    """tf.data slices, shuffles and batches on the host even when built from tf tensors, on every backend;
    Keras on TensorFlow (2 and 3) wraps NumPy and tensors alike in tf.data, so nothing there is on the device."""
    from bench.core.knobs import KNOBS
    from bench.core.stacks import STACKS, get_stack
    from bench.models.engines.keras.data import HOST_TF_DATA, placement

    keras_stacks = [get_stack(s) for s in STACKS if get_stack(s).family == "keras"]
    for stack in keras_stacks:
        for pipeline in KNOBS["keras"]["data_pipeline"]:
            assert placement(pipeline, stack.keras_major, stack.backend)
        assert placement("tf_data_tensors", stack.keras_major, stack.backend) == HOST_TF_DATA
    assert placement("tensors_fit", 2, "tensorflow") == placement("tensors_fit", 3, "tensorflow") == HOST_TF_DATA
    with pytest.raises(ValueError, match="no train_data_placement"):
        placement("tensors_fit", 2, "jax")


#: Runs ``fit`` on bench's own ``train_data`` arguments for each pipeline named on the command line and reports
#: what Keras did with them: which data adapter methods made the batches, and as what the arrays were sliced.
PLACEMENT_PROBE = """
import json, sys, types
import numpy as np
import keras
from keras.src.trainers import data_adapters
from keras.src.trainers.data_adapters import array_data_adapter, array_slicing
from bench.models.engines.keras.data import train_data

seen = {"calls": [], "sliced_as": []}

def spy(cls, name):
    orig = getattr(cls, name)
    def wrapper(self, *a, **k):
        seen["calls"].append(f"{cls.__name__}.{name}")
        return orig(self, *a, **k)
    setattr(cls, name, wrapper)

for cls in (array_data_adapter.ArrayDataAdapter, data_adapters.TFDatasetAdapter):
    for name in ("get_numpy_iterator", "get_tf_dataset", "get_jax_iterator", "get_torch_dataloader"):
        spy(cls, name)
convert = array_slicing.convert_to_sliceable

def convert_spy(arrays, target_backend=None):
    out = convert(arrays, target_backend)
    if target_backend in ("numpy", "jax", "torch"):
        seen["sliced_as"] += [type(a).__name__ for a in keras.tree.flatten(out)]
    return out

array_slicing.convert_to_sliceable = convert_spy
ds = types.SimpleNamespace(x_train=(np.random.rand(64, 4).astype("float32"),),
                           y_train=(np.arange(64) % 2).astype("int32"), n_train=64)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
model.compile("sgd", "sparse_categorical_crossentropy")
out = {}
for pipeline in sys.argv[1:]:
    seen["calls"].clear(); seen["sliced_as"].clear()
    model.fit(**train_data(keras, pipeline, ds, 16), epochs=1, verbose=0)
    out[pipeline] = {k: sorted(set(v)) for k, v in seen.items()}
print("OBSERVED" + json.dumps(out))
"""


def observed_placement(obs: dict) -> str:
    """The placement label that what Keras did (``PLACEMENT_PROBE``) amounts to."""
    from bench.models.engines.keras.data import DEVICE_TORCH, HOST_NUMPY, HOST_TF_DATA

    if any(c.startswith("TFDatasetAdapter.") or c == "ArrayDataAdapter.get_tf_dataset" for c in obs["calls"]):
        return HOST_TF_DATA
    kinds = {"NumpySliceable": HOST_NUMPY, "TorchSliceable": DEVICE_TORCH}
    labels = {kinds[k] for k in obs["sliced_as"]}
    assert len(labels) == 1, obs
    return labels.pop()


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_train_data_placement_matches_what_keras_fit_does(backend):
    """keras 3.15.1 on the CPU, per backend: the label of each pipeline is what ``fit`` does with bench's own
    arguments. On TensorFlow, backend tensors (tensors_fit) go into a tf.data pipeline on the host; on JAX they
    become NumPy and are sliced on the host; only on PyTorch are batches sliced from the tensors themselves."""
    import json
    import os
    import subprocess
    import sys

    from bench.core.knobs import KNOBS
    from bench.models.engines.keras.data import placement

    for module in ("keras", "tensorflow", backend):
        pytest.importorskip(module)
    pipelines = list(KNOBS["keras"]["data_pipeline"])
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3",
           "PYTHONPATH": os.getcwd()}
    p = subprocess.run([sys.executable, "-c", PLACEMENT_PROBE, *pipelines], env=env, capture_output=True, text=True,
                       timeout=300)
    line = next((x for x in p.stdout.splitlines() if x.startswith("OBSERVED")), None)
    assert line, p.stderr[-3000:]
    observed = json.loads(line.removeprefix("OBSERVED"))
    assert {k: observed_placement(v) for k, v in observed.items()} == {k: placement(k, 3, backend) for k in pipelines}


def test_steps_per_execution_spread_is_over_executions(monkeypatch):
    """steps_per_execution=4: Keras reports one batch-end per execution. One execution per steady epoch
    has no spread to report (null, not four copies of its mean); two give statistics over executions."""
    import bench.instruments.timing as timing
    from bench.instruments.timing import EpochTimer

    t = iter([0.0, 8.0, 10.0, 12.0, 20.0, 22.0, 26.0])
    monkeypatch.setattr(timing, "clock", lambda: next(t))
    timer = EpochTimer(lambda: None)
    timer.begin_epoch()
    timer.end_step(4)             # epoch 1: 8 s (compile)
    timer.begin_epoch()
    timer.end_step(4)             # epoch 2: one execution, 2 s
    one = timer.summary(4, 16)
    assert one["ms_per_step_basis"] == "execution" and one["executions"] == 1 and one["steps"] == 4
    assert one["ms_per_step_mean"] == pytest.approx(500.0)
    assert all(one[f"ms_per_step_{k}"] is None for k in ("p50", "p90", "std", "min", "max"))
    timer.begin_epoch()
    timer.end_step(4)             # epoch 3: 2 s
    timer.end_step(4)             # and 4 s
    two = timer.summary(4, 16)
    assert two["executions"] == 3 and two["steps"] == 12
    assert two["ms_per_step_mean"] == pytest.approx(8000.0 / 12)
    assert two["ms_per_step_min"] == pytest.approx(500.0) and two["ms_per_step_max"] == pytest.approx(1000.0)


def test_one_step_per_execution_keeps_per_step_statistics():
    from bench.instruments.timing import execution_stats

    s = execution_stats([(0.001, 1), (0.003, 1)])
    assert s["ms_per_step_basis"] == "step" and s["ms_per_step_p50"] == pytest.approx(2.0) and s["steps"] == 2


def test_tensorflow_is_kept_off_the_gpu_in_non_tf_stacks(tmp_path):
    """Whoever imports TensorFlow in a JAX or PyTorch cell (keras-hub via tensorflow-text, tf.data), its GPUs
    are hidden right after the import, before it can initialise them. A fake tensorflow records the call."""
    import os
    import subprocess
    import sys

    fake = tmp_path / "tensorflow"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "calls = []\nclass config:\n    @staticmethod\n    def set_visible_devices(devices, kind):\n"
        "        calls.append((devices, kind))\n")
    code = ("from bench.models.engines.frameworks import hide_gpus_from_tensorflow as hide\nassert hide()\n"
            "import tensorflow\nprint(tensorflow.calls)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[([], 'GPU')]"


FAKE_TORCH = '''\
import os, warnings
MODE = os.environ["FAKE_TORCH"]
OLD = "The NVIDIA driver on your system is too old (found version 12040). Please update your GPU driver"
if MODE == "broken":
    raise ImportError("libcudnn.so.9: cannot open shared object file")
class cuda:
    @staticmethod
    def device_count():
        if MODE == "warn":  # torch's lazy init reports an old driver as a warning and zero devices
            warnings.warn("CUDA initialization: " + OLD)
            return 0
        return 1
    @staticmethod
    def get_device_name(i):
        if MODE == "raise":  # NVML counts the GPU, the first CUDA call fails
            raise RuntimeError(OLD)
        return "Fake H100"
class _T:
    def cuda(self): return self
    def __matmul__(self, other): return self
    def sum(self): return self
    def item(self): return 16777216.0
def from_numpy(a): return _T()
'''


@pytest.mark.parametrize("mode, expected", [
    ("raise", "R580 or newer"),
    ("warn", "R580 or newer"),
    ("broken", "cannot import the torch framework"),
    ("ok", ["Fake H100"]),
])
def test_gpu_probe_names_the_driver_an_image_needs(tmp_path, monkeypatch, mode, expected):
    """torch 2.13.0 (CUDA 13.0) on an R535-R570 driver: the error says which driver the image needs, and is
    not mislabelled as an import failure."""
    from bench.core.stacks import get_stack
    from bench.run.probe import probe_gpus

    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("FAKE_TORCH", mode)
    if isinstance(expected, list):
        assert probe_gpus(get_stack("pytorch")) == expected
        return
    with pytest.raises(RuntimeError) as e:
        probe_gpus(get_stack("pytorch"))
    assert expected in str(e.value)
    if mode != "broken":
        assert "cannot import" not in str(e.value) and "CUDA 13.0" in str(e.value)


def test_cuda_jit_cache_growth_is_recorded(tmp_path, monkeypatch):
    from bench.instruments.environment import cuda_cache_block, cuda_cache_bytes

    monkeypatch.delenv("CUDA_CACHE_PATH", raising=False)
    assert cuda_cache_bytes() is None and cuda_cache_block(None)["jit_compiled"] is None
    monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "cuda"))
    before = cuda_cache_bytes()
    assert before == 0  # not created yet: the driver makes it at the first JIT
    (tmp_path / "cuda" / "ab").mkdir(parents=True)
    (tmp_path / "cuda" / "ab" / "kernel.bin").write_bytes(b"x" * 1000)  # what the driver leaves after a JIT
    block = cuda_cache_block(before)
    assert block["bytes_after"] == 1000 and block["jit_compiled"] is True
    assert cuda_cache_block(1000)["jit_compiled"] is False  # a warm cache: nothing compiled
    # a process killed before its exit may not have written what it compiled: unknown, not "nothing compiled"
    assert cuda_cache_block(1000, exited=False)["jit_compiled"] is None
    assert cuda_cache_block(before, exited=False)["jit_compiled"] is True  # what it did write is known


def test_compose_persists_the_cuda_jit_cache():
    from pathlib import Path

    import yaml

    compose = yaml.safe_load(Path("compose.yaml").read_text())
    assert "cuda-cache" in compose["volumes"]
    for name, service in compose["services"].items():
        if name == "collector":
            continue
        env = service["environment"]
        assert env["CUDA_CACHE_PATH"].startswith("/cache/") and int(env["CUDA_CACHE_MAXSIZE"]) == 4 * 2**30
        assert "cuda-cache:/cache" in service["volumes"], name


def fake_pynvml(mig):
    import types

    class NotSupported(Exception):
        pass

    def get_mig(h):
        if mig is None:
            raise NotSupported("Not Supported")
        return (1 if mig else 0, 0)

    return types.SimpleNamespace(
        NVML_DEVICE_MIG_ENABLE=1, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: "h", nvmlSystemGetCudaDriverVersion_v2=lambda: 13000,
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetName=lambda h: "NVIDIA A100-SXM4-40GB",
        nvmlDeviceGetUUID=lambda h: "GPU-1", nvmlSystemGetDriverVersion=lambda: "580.65.06",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=40 * 2**30), nvmlDeviceGetMigMode=get_mig)


@pytest.mark.parametrize("mig, expected", [(True, True), (False, False), (None, None)])
def test_mig_mode_is_recorded(monkeypatch, mig, expected):
    import sys

    from bench.instruments.environment import gpu_info

    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(mig))
    info = gpu_info()
    assert info["available"] and info["mig_mode"] is expected and info["cuda_driver"] == "13.0"


def test_report_says_when_a_run_used_mig_or_paid_for_ptx_jit():
    pd = pytest.importorskip("pandas")
    from bench.results.report.provenance import provenance

    df = pd.DataFrame({"stack": ["pytorch", "keras3-tf"], "device": ["gpu", "gpu"],
                       "env.gpu.mig_mode": [True, True], "env.cuda_cache.jit_compiled": [False, True]})
    text = "\n".join(provenance(df))
    assert "MIG mode" in text and "1 cell(s) paid for the driver's PTX JIT" in text
    clean = "\n".join(provenance(df.assign(**{"env.gpu.mig_mode": [False, None]})))
    assert "MIG mode" not in clean


def test_mfu_against_the_measured_gemm_peak(tmp_path, monkeypatch):
    """make doctor saved the GEMM peak of this image on this GPU: the record adds MFU against it; another GPU
    model's measurement, or none, gives null with the reason."""
    import json

    from bench.run.worker import add_mfu

    (tmp_path / "doctor").mkdir()
    software = {"image_digest": "sha256:img", "driver": "580.65.06", "packages": {"torch": "2.13.0"}}
    (tmp_path / "doctor" / "pytorch-gpu.json").write_text(json.dumps(
        {"part": "image", "utc": "2026-11-22T00:00:00+00:00", "gpu": "NVIDIA H100 80GB HBM3", "software": software,
         "measured_tflops": {"bf16": 700.0, "fp32": 50.0, "tf32": 350.0}}))
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("BENCH_FLAVOR", "gpu")

    def rec(gpu, precision="bfloat16"):
        r = Record.model_validate({"stack": "pytorch", "device": "gpu", "env": {
                                       "gpu": {"name": gpu, "driver": "580.65.06"}, "image_digest": "sha256:img",
                                       "packages": {"torch": "2.13.0"}},
                                   "settings": {"precision": precision, "NVIDIA_TF32_OVERRIDE": "0"},
                                   "metrics": {"flops_per_step": 350e12, "ms_per_step_mean": 1000.0}})
        add_mfu(r)
        return r.metrics.model_dump(exclude_unset=True)

    m = rec("NVIDIA H100 80GB HBM3")
    assert m["mfu_measured"] == pytest.approx(0.5) and m["mfu"] == pytest.approx(350 / 989.5)
    assert "pytorch-gpu.json" in m["measured_peak_source"] and "bf16" in m["measured_peak_source"]
    assert rec("NVIDIA H100 80GB HBM3", "float32")["mfu_measured"] == pytest.approx(7.0)  # fp32: override on
    other = rec("NVIDIA A100-SXM4-80GB")
    assert other["mfu_measured"] is None and "measured on" in other["measured_peak_source"]


def test_gpu_record_notes_mig(tmp_path, monkeypatch):
    from bench.results.cell import Cell
    from bench.results.record import new_record
    from bench.run import worker

    monkeypatch.setattr(worker, "capture", lambda: {"gpu": {"name": "NVIDIA A100-SXM4-40GB", "mig_mode": True}})
    cell = Cell(stack="keras3-tf", suite="classic", workload="mnist_cnn", task="fit", size="full", device="gpu")
    typed = Record.model_validate(new_record(cell))
    worker.add_env(typed, cell)
    rec = typed.model_dump(exclude_unset=True)
    assert worker.MIG_NOTE in rec["notes"]
    assert "cuda_cache" not in rec["env"]  # the runner's, after the process exits (test_runner.py)


def mig_slice_pynvml(answers_mig_handle: bool):
    """A fake pynvml for a bare host where CUDA_VISIBLE_DEVICES names a MIG slice by UUID: the handle is the MIG
    device's, whose name carries the profile and whose MIG mode NVML does not give (a MIG device handle);
    ``answers_mig_handle``: the driver has ``nvmlDeviceIsMigDeviceHandle`` (else only the name says)."""
    import ctypes
    import types

    class NotSupported(Exception):
        pass

    def not_supported(h):
        raise NotSupported("Not Supported")

    nv = types.SimpleNamespace(
        NVML_DEVICE_MIG_ENABLE=1, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByUUID=lambda u: ("mig", u), nvmlDeviceGetHandleByIndex=lambda i: ("gpu", i),
        nvmlSystemGetCudaDriverVersion_v2=lambda: 12040, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetName=lambda h: "NVIDIA A100-SXM4-40GB MIG 1g.5gb" if h[0] == "mig" else "NVIDIA A100-SXM4-40GB",
        nvmlDeviceGetUUID=lambda h: "MIG-1234" if h[0] == "mig" else "GPU-1",
        nvmlSystemGetDriverVersion=lambda: "550.54.15",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=5 * 2**30), nvmlDeviceGetMigMode=not_supported)
    if answers_mig_handle:  # nvidia-ml-py 13.615.71 returns the c_uint itself
        nv.nvmlDeviceIsMigDeviceHandle = lambda h: ctypes.c_uint(1 if h[0] == "mig" else 0)
    return nv


@pytest.mark.parametrize("answers_mig_handle", [True, False])
def test_a_mig_slice_chosen_by_uuid_is_a_slice_with_no_datasheet_peak(monkeypatch, answers_mig_handle):
    """CUDA_VISIBLE_DEVICES=MIG-<uuid> on a bare host: NVML hands back the MIG device, whose name matches the A100
    family. The record must say MIG (and carry the note), and MFU must not divide by the whole A100's peak."""
    import sys

    from bench.instruments.environment import gpu_info
    from bench.results.cell import Cell
    from bench.results.record import new_record
    from bench.run import worker

    monkeypatch.setitem(sys.modules, "pynvml", mig_slice_pynvml(answers_mig_handle))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-1234")
    info = gpu_info()
    assert info["name"] == "NVIDIA A100-SXM4-40GB MIG 1g.5gb" and info["mig_mode"] is True

    cell = Cell(stack="pytorch", suite="paper", workload="bert", task="fit", size="full", device="gpu")
    typed = Record.model_validate(new_record(cell))
    monkeypatch.setattr(worker, "capture", lambda: {"gpu": info})
    worker.add_env(typed, cell)
    assert worker.MIG_NOTE in typed.notes
    rec = typed.model_dump(exclude_unset=True)
    rec.update(settings={"precision": "bfloat16"}, metrics={"flops_per_step": 1e12, "ms_per_step_mean": 10.0})
    typed = Record.model_validate(rec)
    worker.add_mfu(typed)
    rec = typed.model_dump(exclude_unset=True)
    assert rec["metrics"]["peak_flops"] is None and "MIG slice" in rec["metrics"]["peak_source"]
    assert rec["metrics"]["mfu"] is None


def test_a_mig_slice_name_has_no_datasheet_peak_but_a_whole_gpu_does():
    from bench.core.gpus import gpu_family
    from bench.models import flops

    peak, why = flops.peak_flops("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "bfloat16", False)
    assert peak is None and "MIG slice" in why
    assert gpu_family("NVIDIA A100-SXM4-40GB MIG 1g.5gb") is None
    assert flops.peak_flops("NVIDIA A100-SXM4-40GB", "bfloat16", False)[0] == 312e12


@pytest.mark.parametrize("visible, order, name, uuid, note", [
    (None, None, "NVIDIA H100 80GB HBM3", "GPU-aaa", True),    # unset: CUDA's device 0, maybe not NVML's
    ("1", None, "NVIDIA A100-SXM4-80GB", "GPU-bbb", True),     # different models, CUDA's FASTEST_FIRST order
    ("1", "PCI_BUS_ID", "NVIDIA A100-SXM4-80GB", "GPU-bbb", False),
    ("GPU-bbb,GPU-aaa", None, "NVIDIA A100-SXM4-80GB", "GPU-bbb", False),  # a UUID names the GPU exactly
])
def test_gpu_info_reads_the_gpu_cuda_visible_devices_names(monkeypatch, visible, order, name, uuid, note):
    """NVML ignores CUDA_VISIBLE_DEVICES: on a two-GPU host the record's GPU is the cell's, not NVML's GPU 0."""
    import sys

    from bench.instruments.environment import gpu_info

    monkeypatch.setitem(sys.modules, "pynvml", two_gpu_pynvml(names=("NVIDIA H100 80GB HBM3",
                                                                     "NVIDIA A100-SXM4-80GB")))
    for key, value in (("CUDA_VISIBLE_DEVICES", visible), ("CUDA_DEVICE_ORDER", order)):
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    info = gpu_info()
    assert (info["name"], info["uuid"], info["count"]) == (name, uuid, 2)
    assert ("nvml_device_note" in info) is note
    if note:
        assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in info["nvml_device_note"]


def test_gpu_info_index_on_a_host_of_one_model_needs_no_note(monkeypatch):
    import sys

    from bench.instruments.environment import gpu_info

    monkeypatch.setitem(sys.modules, "pynvml", two_gpu_pynvml())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    info = gpu_info()
    assert info["uuid"] == "GPU-bbb" and info["nvml_device"] == 1 and "nvml_device_note" not in info


@pytest.mark.parametrize("framework_gpu", ["/physical_device:GPU:0", "cuda:0", "NVIDIA H100 80GB HBM3"])
def test_measured_peak_is_keyed_by_the_gpus_nvml_identity(tmp_path, monkeypatch, framework_gpu):
    """The doctor saves the GPU as NVML names it (the framework's device string never matched the record's
    NVML name on keras2-tf, keras3-tf and keras3-jax); a record matches it by UUID, else by name."""
    import sys

    from bench.core.checks import save
    from bench.instruments.environment import gpu_info, package_versions
    from bench.run import probe
    from bench.run.worker import add_mfu

    monkeypatch.setitem(sys.modules, "pynvml", two_gpu_pynvml())
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("BENCH_IMAGE_DIGEST", raising=False)
    monkeypatch.delenv("BENCH_IMAGE_ID", raising=False)
    checks, extra = probe.image_checks("keras3-tf", "gpu", measure=lambda s, d, t: (700.0, ""),
                                        probe=lambda s: [framework_gpu])
    save(tmp_path / "doctor" / "keras3-tf-gpu.json", "image", checks, extra)
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("BENCH_FLAVOR", "gpu")

    def mfu(gpu):
        r = Record.model_validate({"stack": "keras3-tf", "device": "gpu",
                                   "env": {"gpu": gpu, "packages": package_versions()},
                                   "settings": {"precision": "bfloat16", "NVIDIA_TF32_OVERRIDE": "0"},
                                   "metrics": {"flops_per_step": 350e12, "ms_per_step_mean": 1000.0}})
        add_mfu(r)
        return r.metrics.model_dump(exclude_unset=True)

    same = mfu(gpu_info())  # the cell's record, on the GPU the doctor measured
    assert same["mfu_measured"] == pytest.approx(0.5) and "GPU-aaa" in same["measured_peak_source"]
    by_name = mfu({"name": "NVIDIA H100 80GB HBM3", "driver": "580.65.06"})  # without a UUID: the model's name
    assert by_name["mfu_measured"] == pytest.approx(0.5)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    other = mfu(gpu_info())  # the same model, another GPU: not its measurement
    assert other["mfu_measured"] is None and "GPU-aaa" in other["measured_peak_source"]
    assert [c.state for c in checks] == ["ok"] * 4 and extra["framework_gpu"] == framework_gpu


def test_doctor_without_nvml_says_the_peak_cannot_be_matched():
    from bench.run import probe

    checks, extra = probe.image_checks("keras3-jax", "gpu", measure=lambda s, d, t: (500.0, ""),
                                        probe=lambda s: ["cuda:0"],
                                        identify=lambda: {"available": False, "reason": "NVML unavailable: x"})
    identity = [c for c in checks if c.name.endswith("GPU identity")]
    assert extra["gpu"] is None and identity[0].state == "warn" and "mfu_measured" in identity[0].fix


def test_report_calls_native_gpu_rows_checks_of_the_harness():
    """A GPU row no image ran (env.native, the GPU window) is labelled as such; image rows and CPU rows are not."""
    pd = pytest.importorskip("pandas")
    from bench.results.report.provenance import provenance

    df = pd.DataFrame({"stack": ["pytorch", "jax", "keras3-jax"], "device": ["gpu", "gpu", "cpu"],
                       "env.native": [True, False, True]})
    text = "\n".join(provenance(df))
    assert "1 GPU row(s) ran natively" in text and "not published-grade rows" in text
    assert "ran natively" not in "\n".join(provenance(df.assign(**{"env.native": [False, None, True]})))
