"""Smaller method-conformance fixes: the tuning suite's DataLoader options and PyTorch RMSprop, the paper suite's
Keras fit compiled without metrics and its float64 host arrays, and the classic CIFAR iterator's partial batches."""

from __future__ import annotations

import types

import numpy as np
import pytest

from bench.core.families.torch import TorchEpochSettings
from bench.core.knobs import check
from bench.core.stacks import get_stack
from bench.models.workloads import get_workload
from tests.conftest import has, needs_torch
from tests.helpers.cells import engine_cell

needs_hub = pytest.mark.skipif(not all(has(m) for m in ("torch", "keras", "keras_hub", "keras_cv")),
                               reason="keras + keras-hub/keras-cv + torch not installed")


# ---- 1. tuning: PyTorch's DataLoader defaults ------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_loader_defaults_are_pytorchs_and_the_tuned_options_are_a_variant(dev):
    """The tuning suite's default loader options are PyTorch's own, ``DataLoader``'s defaults, pin_memory and
    persistent_workers False (torch/utils/data/dataloader.py@v2.13.0), as the post ran its tensor datasets (a
    loader with the standard parameters: bench.core.reference.tuning_study). The old code turned both on with
    workers."""
    import inspect

    import torch

    from bench.models.engines.torch.data import loader_kwargs

    defaults = inspect.signature(torch.utils.data.DataLoader).parameters
    kw = loader_kwargs(torch, 4, 6, torch.device(dev))
    assert kw["pin_memory"] is defaults["pin_memory"].default is False
    assert kw["persistent_workers"] is defaults["persistent_workers"].default is False
    s = TorchEpochSettings()
    assert (s.pin_memory, s.persistent_workers) == (False, False)
    tuned = loader_kwargs(torch, 4, 6, torch.device(dev), pin_memory=True, persistent_workers=True)
    assert tuned["pin_memory"] is (dev == "cuda") and tuned["persistent_workers"] is True
    # persistence needs worker processes (torch raises without them): not passed on with none
    assert loader_kwargs(torch, 4, 0, torch.device(dev), persistent_workers=True)["persistent_workers"] is False


def test_loader_option_knobs_are_refused_where_they_cannot_apply():
    stack = get_stack("pytorch")
    assert "num_workers > 0" in check(stack, {"persistent_workers": True}, "epochs")
    assert "pin_memory" in check(stack, {"pin_memory": True}, "epochs")  # tensors_on_device
    assert check(stack, {"data_pipeline": "tensor_dataset", "num_workers": 6, "pin_memory": True,
                                    "persistent_workers": True}, "epochs") is None


@needs_torch
@pytest.mark.parametrize("knobs, expected", [({}, (False, False)),
                                             ({"persistent_workers": True}, (False, True)),
                                             ({"pin_memory": True}, (False, False))])  # CPU: nothing pinned
def test_loader_options_are_recorded_as_they_took_effect(knobs, expected):
    from bench.models.datasets import synthetic
    from bench.models.engines.torch import epochs as torch_epochs

    w = get_workload("mnist_cnn_tuning")
    ds = synthetic("mnist", 16, 8, "test")
    settings = TorchEpochSettings(data_pipeline="tensor_dataset", num_workers=1, **knobs)
    result = torch_epochs.fit(get_stack("pytorch"), w, ds, engine_cell("pytorch", w, 1, 8), settings)
    s = result.settings
    assert (s.pin_memory, s.persistent_workers) == expected


# ---- 2. tuning: RMSprop with each framework's defaults ---------------------------------------------------------

@needs_torch
def test_tuning_pytorch_rmsprop_has_torchs_defaults_and_keras_keeps_keras_3s():
    """The post took each engine's optimizer from its own modules and printed no rho / epsilon: torch's
    defaults on PyTorch (alpha 0.99, eps 1e-8: torch/optim/rmsprop.py@v2.13.0), Keras 3's on Keras (rho 0.9,
    epsilon 1e-7: keras/src/optimizers/rmsprop.py@v3.9.2:56-58). The old code gave PyTorch Keras' values."""
    import inspect

    import torch

    from bench.models.engines.torch.epochs import make_optimizer, optimizer_record

    w = get_workload("mnist_cnn_tuning")
    sig = inspect.signature(torch.optim.RMSprop).parameters
    opt = make_optimizer(torch, torch.nn.Linear(2, 2).parameters(), w)
    assert (opt.defaults["alpha"], opt.defaults["eps"]) == (sig["alpha"].default, sig["eps"].default) == (0.99, 1e-8)
    assert optimizer_record(opt, w)["alpha"] == 0.99
    keras_side = w.optimizer.for_engine("keras")
    assert (keras_side.rho, keras_side.epsilon) == (0.9, 1e-7) == (w.optimizer.for_engine("jax").rho, 1e-7)
    # the 2017 workloads keep the same values on every engine
    cifar = get_workload("cifar10_cnn").optimizer
    assert cifar.for_engine("torch") == cifar


# ---- 3. paper: Keras fit compiled without metrics --------------------------------------------------------------

@needs_hub
@pytest.mark.parametrize("workload", ["bert", "gemma"])
def test_keras3_fit_compiles_without_metrics_as_the_source(workload, monkeypatch):
    """keras-benchmarks v0.0.5 compiled through keras-nlp 0.8.2's ``Task.compile``, which adds no metric
    (keras_nlp/src/models/task.py@0.8.2:101-106); keras-hub 0.32.0's adds accuracy unless told: the old code
    trained with a SparseCategoricalAccuracy (BERT) / weighted one (Gemma) beside the loss."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    import keras

    if keras.backend.backend() != "torch":
        pytest.skip("Keras was imported on another backend in this process")
    from bench.models.engines.keras.steps import compile_job

    w = get_workload(workload)
    job = w.model.keras_job(get_stack("keras3-torch"), keras, "fit", w.model.config("smoke"), 1, {})
    compile_job(keras, job, "fit", False)
    assert job.model._compile_metrics is None
    assert [m.name for m in job.model.metrics] == ["loss"]
    keras.config.set_dtype_policy("float32")


# ---- 4. paper: the Keras source's float64 host arrays ----------------------------------------------------------

@needs_hub
@pytest.mark.parametrize("workload, task", [("segment_anything", "fit"), ("segment_anything", "predict"),
                                            ("stable_diffusion", "fit")])
def test_keras_host_arrays_have_the_sources_dtypes(workload, task, monkeypatch):
    """benchmark/{sam,stable_diffusion}/keras/fit.py@v0.0.5:12-13 and sam/keras/predict.py@v0.0.5:12-20: images
    and targets from ``np.random.rand`` (float64), SAM's points and labels ``np.array`` of ints (int64). The old
    code made all of them float32."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    import keras

    if keras.backend.backend() != "torch":
        pytest.skip("Keras was imported on another backend in this process")
    w = get_workload(workload)
    cfg = w.model.config("smoke")
    if workload == "segment_anything":
        images = w.model.images(cfg, 1)
        points, labels = w.model.prompts(cfg, 1)
        assert images.dtype == np.float64 and points.dtype == labels.dtype == np.int64
        assert w.model.prompts(w.model.config("full"), 1)[0].tolist() == [[[500, 375], [250, 375]]]
        if task == "fit":
            job = w.model.keras_job(get_stack("keras3-torch"), keras, "fit", cfg, 1, {})
            assert job.inputs.dtype == job.targets.dtype == np.float64
    else:
        job = w.model.keras_job(get_stack("keras3-torch"), keras, "fit", cfg, 1, {})
        assert job.inputs.dtype == job.targets.dtype == np.float64


@needs_hub
def test_pytorch_sam_inputs_stay_float32_as_its_source():
    """benchmark/sam/torch/*.py@v0.0.5:31-33: ``torch.Tensor`` (float32) images, points and labels."""
    w = get_workload("segment_anything")
    job = w.model.torch_job("predict", w.model.config("smoke"), 1, "cpu", {})
    assert job.call is not None
    x = job.call.__closure__  # the call's inputs, as the job holds them
    dtypes = {str(c.cell_contents.dtype) for c in x if hasattr(c.cell_contents, "dtype")}
    assert dtypes == {"torch.float32", "torch.int64"}


# ---- 5. classic: CIFAR's epochs, the LSTM implementation, bAbI's vocabulary ------------------------------------

def source_epoch_batch_sizes(n: int, batch_size: int, steps_per_epoch: int, epoch: int) -> list[int]:
    """The batch sizes of epoch ``epoch`` (1-based) as Keras 2.0.8's ``fit_generator`` drew them from
    ``ImageDataGenerator.flow``: one iterator for the whole fit, each pass over the ``n`` images
    ``ceil(n / batch_size)`` batches, the last one ``n % batch_size`` images when that is not 0
    (``Iterator._flow_index``, keras/preprocessing/image.py@2.0.8:709-729), ``steps_per_epoch`` batches an epoch
    (keras/engine/training.py@2.0.8:2006-2021). Arithmetic only (what ``EPOCH_BATCHES_NOTE`` states).

    Raises:
        ValueError: a non-positive size, step count or epoch.
    """
    if min(n, batch_size, steps_per_epoch, epoch) < 1:
        raise ValueError("n, batch_size, steps_per_epoch and epoch must be positive")
    per_pass = -(-n // batch_size)
    first = (epoch - 1) * steps_per_epoch
    return [min(batch_size, n - (i % per_pass) * batch_size) for i in range(first, first + steps_per_epoch)]


def test_source_cifar_iterator_trains_one_16_image_batch_in_every_epoch_after_the_first():
    """keras/preprocessing/image.py@2.0.8:709-729 (``_flow_index``): 1563 batches per pass of 50,000 images at
    batch 32, the last of 16; ``steps_per_epoch`` 1562 (cifar10_cnn.py@2.0.8:106) on one iterator for the fit."""
    first = source_epoch_batch_sizes(50_000, 32, 1562, 1)
    assert first == [32] * 1562
    for epoch in (2, 3, 50):
        sizes = source_epoch_batch_sizes(50_000, 32, 1562, epoch)
        assert len(sizes) == 1562 and sorted(set(sizes)) == [16, 32] and sizes.count(16) == 1
        assert sum(sizes) == 1561 * 32 + 16
    # an independent count: walk the source's index arithmetic through 3 epochs' batches
    index, seen = 0, []
    for _ in range(3 * 1562):
        start = index * 32 % 50_000
        size = 32 if start + 32 < 50_000 else 50_000 - start
        index = index + 1 if size == 32 else 0
        seen.append(size)
    assert seen[1562:3124] == source_epoch_batch_sizes(50_000, 32, 1562, 2)
    with pytest.raises(ValueError):
        source_epoch_batch_sizes(50_000, 32, 1562, 0)


def test_our_augmented_epochs_are_full_batches_and_the_record_says_how_the_source_differs():
    from bench.models.workloads.training import EPOCH_BATCHES_NOTE

    aug = get_workload("cifar10_cnn").augmentation
    assert aug.drop_remainder and aug.record()["epoch_batches"] == EPOCH_BATCHES_NOTE
    assert "1561 x 32 + 16" in EPOCH_BATCHES_NOTE


@pytest.mark.skipif(not has("keras"), reason="keras not installed")
def test_keras_3_lstm_is_implementation_2_where_2_0_8_ran_0():
    """Keras 2.0.8's LSTM defaulted to ``implementation=0`` (keras/layers/recurrent.py@2.0.8:195), projecting the
    inputs of all steps before the loop (recurrent.py@2.0.8:1076-1095) and four per-gate recurrent matmuls per step
    (recurrent.py@2.0.8:1165-1172); Keras 3 has 2 (keras/src/layers/rnn/lstm.py@v3.15.1:114): two gate-fused
    matmuls per step, input and state (lstm.py@v3.15.1:277-279): the classic table's row."""
    import keras

    from bench.models.workloads.common import lstm_2017

    assert lstm_2017(keras, 4).cell.implementation == 2


def test_babi_vocabulary_is_35_words_plus_padding():
    """babi_rnn.py@2.0.8: ``vocab_size = len(vocab) + 1`` (index 0 pads), qa2 (1k) has 35 words."""
    from bench.models import datasets

    meta = datasets.synthetic("babi", 4, 4, "test").meta
    assert meta["vocab_size"] == 36 == 35 + 1


@needs_torch
def test_augmented_cifar_records_its_loader_options_as_they_took_effect():
    """The augmented loader keeps its one worker for the whole fit (as 2.0.8's one enqueuer) whatever the knobs
    say: the record's settings say so, not the knobs' defaults."""
    from bench.models.datasets import synthetic
    from bench.models.engines.torch import epochs as torch_epochs

    w = get_workload("cifar10_cnn")
    ds = synthetic("cifar10", 64, 8, "test")
    result = torch_epochs.fit(get_stack("pytorch"), w, ds, engine_cell("pytorch", w, 1, 32), TorchEpochSettings())
    s = result.settings
    assert (s.pin_memory, s.persistent_workers) == (False, True)
    assert s.augmentation["epoch_batches"].startswith("ours: n // batch full batches")


# ---- tf-keras optimizers compile their own update with XLA -----------------------------------------------------

def test_tf_keras_optimizer_xla_follows_the_jit_compile_knob_and_is_recorded_as_it_took_effect():
    """tf-keras optimizers take ``jit_compile=True`` by default and run each update step under XLA whenever a GPU
    is listed (tf_keras/src/optimizers/optimizer.py@2.21.0:49, 59-67, 211), whatever ``Model.compile`` got. So the
    ``jit_compile=false`` variant (2017: no XLA) must switch it off there too, and the record must say what the
    optimizer did. Keras 3 optimizers have no such argument and get none. The old code passed nothing."""
    import types

    from bench.models.engines.keras.epochs import make_optimizer, optimizer_record

    made: list[dict] = []

    class TfKerasRMSprop:  # tf-keras' signature and its GPU rule, as optimizer.py:59-67
        def __init__(self, learning_rate, rho, epsilon, jit_compile=True, gpu=True):
            made.append({"jit_compile": jit_compile})
            self.jit_compile = bool(jit_compile and gpu)

        def get_config(self):
            return {"learning_rate": 0.001, "rho": 0.9, "epsilon": 1e-8}

    class Keras3RMSprop:  # no jit_compile argument
        def __init__(self, learning_rate, rho, epsilon):
            made.append({})

        def get_config(self):
            return {"learning_rate": 0.001, "rho": 0.9, "epsilon": 1e-8}

    w = get_workload("mnist_mlp")
    tfk = types.SimpleNamespace(optimizers=types.SimpleNamespace(RMSprop=TfKerasRMSprop))
    k3 = types.SimpleNamespace(optimizers=types.SimpleNamespace(RMSprop=Keras3RMSprop))
    on = make_optimizer(tfk, w, None)
    assert made[-1] == {"jit_compile": True} and optimizer_record(on)["jit_compile"] is True
    off = make_optimizer(tfk, w, False)
    assert made[-1] == {"jit_compile": False} and optimizer_record(off)["jit_compile"] is False
    make_optimizer(tfk, w, True)
    assert made[-1] == {"jit_compile": True}
    k3opt = make_optimizer(k3, w, False)
    assert made[-1] == {} and "jit_compile" not in optimizer_record(k3opt)


# ---- the paper suite's Keras fit: tf-keras optimizers' XLA follows the knob there too -------------------------

class _TfKerasAdam:
    """tf-keras 2.21's Adam/AdamW as far as the engine sees them: ``jit_compile=True`` by default
    (tf_keras/src/optimizers/adam.py:110, adamw.py:104), kept only where a GPU is listed (optimizer.py:59-67; a GPU
    is listed here)."""

    made: list[dict] = []

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 weight_decay=None, jit_compile=True):
        self.made.append({"jit_compile": jit_compile})
        self.weight_decay = weight_decay
        self.jit_compile = bool(jit_compile)

    def get_config(self):
        return {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "amsgrad": False,
                "weight_decay": self.weight_decay, "jit_compile": self.jit_compile}


class _TfKerasAdamW(_TfKerasAdam):
    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, jit_compile=True):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay, jit_compile)


class _Keras3Adam(_TfKerasAdam):  # Keras 3: no jit_compile argument, no such attribute
    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 weight_decay=None):
        self.made.append({})
        self.weight_decay = weight_decay

    def get_config(self):
        return {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "amsgrad": False,
                "weight_decay": self.weight_decay}


class _Keras3AdamW(_Keras3Adam):
    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay)


class _FakeModel:
    def __init__(self):
        self.compiled: list[dict] = []

    def compile(self, **kw):
        self.compiled.append(kw)

    def fit(self, *args, **kw):
        return None


@pytest.mark.parametrize("stack_id, workload, knob, received, in_effect", [
    ("keras2-tf", "bert", None, {"jit_compile": True}, True),  # the source's use_jit(): tf-keras' default, XLA on
    ("keras2-tf", "bert", False, {"jit_compile": False}, False),  # the no-XLA variant: off there too
    ("keras2-tf", "bert", True, {"jit_compile": True}, True),
    ("keras2-tf", "stable_diffusion", None, {"jit_compile": True}, True),  # SD fit requested nothing: the default
    ("keras2-tf", "stable_diffusion", False, {"jit_compile": False}, False),
    ("keras3-tf", "bert", False, {}, None),  # Keras 3: no such argument, nothing recorded for it
])
def test_keras_paper_fit_optimizer_xla_follows_the_jit_compile_knob_and_is_recorded(monkeypatch, stack_id, workload,
                                                                                    knob, received, in_effect):
    """tf-keras optimizers compile each update step with XLA by default on a GPU
    (tf_keras/src/optimizers/optimizer.py@2.21.0:49, 59-67, 211), whatever ``Model.compile`` gets; the paper
    suite's step engine built Adam/AdamW without the argument, so ``--set jit_compile=false`` kept the optimizer's
    XLA on, and its records had no ``settings.optimizer``. Now the request reaches the optimizer, as in the fit
    engine, and the record says what the optimizer did."""
    from bench.models.engines.keras import steps as ksteps
    from bench.models.workloads.job import Job
    from bench.results.schema import EffectiveSettings

    monkeypatch.setattr(ksteps, "_repeat", lambda batch, n: None)
    monkeypatch.setattr(ksteps, "make_timing_callback", lambda keras, timer, split_first: None)
    legacy = get_stack(stack_id).keras_major == 2
    keras = types.SimpleNamespace(optimizers=types.SimpleNamespace(
        Adam=_TfKerasAdam if legacy else _Keras3Adam, AdamW=_TfKerasAdamW if legacy else _Keras3AdamW))
    name = {"bert": "adamw", "stable_diffusion": "adam"}[workload]  # the sources' (test_paper_source.py)
    job = Job(model=_FakeModel(), inputs=np.zeros(1), targets=np.zeros(1), loss="mse", optimizer=name)
    requested, _ = ksteps.jit_request(get_stack(stack_id), workload, "fit", knob)
    effective = EffectiveSettings()
    _TfKerasAdam.made.clear()
    ksteps._time_steps(keras, job, "fit", requested, 2, None, effective)
    assert _TfKerasAdam.made == [received]
    record = effective.optimizer
    assert record is not None and record["name"] == type(job.model.compiled[0]["optimizer"]).__name__
    assert record.get("jit_compile") is in_effect
    if name == "adamw":
        assert record["weight_decay"] == pytest.approx(0.004)
