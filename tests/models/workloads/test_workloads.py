"""Each workload folder's published facts (``<folder>/spec.py``'s ``PUBLISHED``, with where its source states them)
hold for its registration: the declared parameter count (every family's build is held to it in
tests/contract/test_parity.py), the optimizer, batch and epochs (keras-team/keras ``examples/*.py@2.0.8``,
``keras/optimizers.py@2.0.8``); the registry is the folders, in their specs' order; a new folder joins it and a
plan's cells."""

import importlib
from pathlib import Path

import pytest

import bench.models.workloads as registry
from bench.models import datasets
from bench.models.workloads import SUITES, WORKLOADS, get_workload
from tests.conftest import needs_keras_torch, needs_torch
from tests.contract.grid import FIT_WORKLOADS


def meta(name):
    return datasets.SYNTHETIC[get_workload(name).dataset]["meta"]


def _specs():
    """Each workload folder's spec module, found on disk (not through the registry), with its ``ORDER``."""
    root = Path(registry.__file__).parent
    names = sorted(p.parent.name for p in root.glob("*/spec.py"))
    specs = [importlib.import_module(f"bench.models.workloads.{n}.spec") for n in names]
    return sorted(specs, key=lambda spec: spec.ORDER)


def test_registry_is_the_folders_in_their_specs_order():
    """Every folder holding a spec.py registers its workloads, and nothing else is registered; a suite lists its
    workloads in their specs' ``ORDER`` (``bench list``, a plan's cells)."""
    specs = _specs()
    assert len({spec.ORDER for spec in specs}) == len(specs)  # no tie left to the folders' names
    expected: dict[str, list[str]] = {}
    for w in (w for spec in specs for w in spec.WORKLOADS):
        expected.setdefault(w.suite, []).append(w.name)
    assert expected == SUITES and list(WORKLOADS) == [n for names in expected.values() for n in names]
    assert list(SUITES)[:2] == ["classic", "tuning"] and SUITES["classic"][0] == "mnist_mlp"
    assert SUITES["tuning"] == ["mnist_cnn_tuning"]  # the study's CNN under its own name, in its own suite
    for name in FIT_WORKLOADS:
        w = WORKLOADS[name]
        assert w.tasks == ("fit",) and set(w.epochs) == {"smoke", "full"} and w.source
    with pytest.raises(KeyError, match="known"):
        get_workload("lenet")


@pytest.mark.parametrize("name", FIT_WORKLOADS)
def test_declared_parameter_counts_are_the_published_ones(name):
    """``bench list`` shows ``Workload.params``; every family's build is checked against it in tests/contract.
    Every epoch-trained workload states its published facts, with where its source states them."""
    w = WORKLOADS[name]
    assert w.published is not None, f"{name}: its folder's spec.py states no PUBLISHED facts"
    assert w.params == w.published.params and w.published.where


def test_smoke_batch_keeps_float16_cells_cheap():
    """The tuning sweep's model at smoke size: a small batch (float16 convolutions are emulated on some
    CPUs at ~0.1 s per image), at least two steps per epoch so that step statistics exist; full size keeps
    the published batch. Every other workload keeps its published batch at smoke size unless it declares one."""
    cnn = get_workload("mnist_cnn_tuning")
    assert (cnn.batch_for("full"), cnn.batch_for("smoke")) == (256, 8)
    assert cnn.samples["smoke"] * cnn.epochs["smoke"] <= 64
    assert cnn.samples["smoke"] // cnn.batch_for("smoke") >= 2
    for name in FIT_WORKLOADS:
        w = WORKLOADS[name]
        assert w.batch_for("full") == w.batch_size
        assert w.batch_for("smoke") == (w.smoke_batch_size or w.batch_size)
        assert (w.samples["smoke"] or 0) // w.batch_for("smoke") >= 2, name


def test_mnist_cnn_smoke_cells_stay_cheap():
    """The 2017 CNN costs ~10 ms per image on a 2-core CPU: its smoke cell trains 128 images an epoch, in 16 steps
    (Adadelta's first updates are small: 16 steps let the loss fall in 2 epochs on every stack)."""
    w = get_workload("mnist_cnn")
    assert (w.samples["smoke"], w.batch_for("smoke"), w.epochs["smoke"]) == (128, 8, 2)


@needs_keras_torch
def test_mnist_cnn_is_the_2017_script(monkeypatch):
    """examples/mnist_cnn.py@2.0.8 lines 47-57: Conv2D(32, 3, relu), Conv2D(64, 3, relu), MaxPooling2D(2),
    Dropout(0.25), Flatten, Dense(128, relu), Dropout(0.5), Dense(10, softmax); batch 128 (line 16), 12 epochs
    (line 18), Adadelta() (line 60)."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    import keras

    w = get_workload("mnist_cnn")
    model = w.build_keras(keras, meta("mnist_cnn"))
    layers = [(type(layer).__name__, layer.get_config()) for layer in model.layers]
    assert [n for n, _ in layers] == ["Conv2D", "Conv2D", "MaxPooling2D", "Dropout", "Flatten", "Dense", "Dropout",
                                      "Dense"]
    assert [(c["filters"], tuple(c["kernel_size"]), c["activation"]) for n, c in layers if n == "Conv2D"] == \
        [(32, (3, 3), "relu"), (64, (3, 3), "relu")]
    assert [c["rate"] for n, c in layers if n == "Dropout"] == [0.25, 0.5]
    assert [(c["units"], c["activation"]) for n, c in layers if n == "Dense"] == [(128, "relu"), (10, "softmax")]
    assert (w.batch_size, w.epochs["full"], w.optimizer.name, w.suite) == (128, 12, "adadelta", "classic")


@pytest.mark.parametrize("name", FIT_WORKLOADS)
def test_optimizer_is_the_sources(name):
    """The optimizer a workload trains with (``OptimizerSpec``, e.g. from ``common.rmsprop_208``) is the one its
    folder's ``PUBLISHED`` states (each value's file@tag: ``PUBLISHED.where``)."""
    w = get_workload(name)
    o = w.optimizer
    assert (o.name, o.learning_rate, o.rho, o.epsilon, o.beta_1, o.beta_2, o.decay) == tuple(w.published.optimizer)
    assert o.source


@pytest.mark.parametrize("name", FIT_WORKLOADS)
def test_batch_and_epochs_are_the_sources(name):
    """Batch and full-size epochs are the published run's (``PUBLISHED.where``: the scripts' lines; cifar10_cnn the
    2017 notebook's 50 epochs, where the script runs 200: tests/models/workloads/test_notebooks.py)."""
    w = get_workload(name)
    assert (w.batch_size, w.epochs["full"]) == (w.published.batch_size, w.published.epochs)
    if name == "cifar10_cnn":  # the notebook's 50, not the script's 200: both named
        assert any("200" in n and "fa5f333" in n for n in w.notes)


def test_cifar10_augmentation_is_the_scripts():
    """examples/cifar10_cnn.py@2.0.8:88-98: ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
    horizontal_flip=True), fill_mode at its default 'nearest' (keras/preprocessing/image.py@2.0.8:396) resampled
    with order=0 (image.py@2.0.8:201-206); fit_generator's defaults max_queue_size=10, workers=1
    (keras/engine/training.py@2.0.8:1839-1840); steps_per_epoch = n // batch (cifar10_cnn.py@2.0.8:106). No other
    workload's script augments."""
    a = get_workload("cifar10_cnn").augmentation
    assert (a.width_shift_range, a.height_shift_range, a.horizontal_flip, a.fill_mode, a.interpolation) == \
        (0.1, 0.1, True, "nearest", "nearest")
    assert (a.workers, a.max_queue_size, a.drop_remainder) == (1, 10, True)
    assert [n for n in FIT_WORKLOADS if WORKLOADS[n].augmentation] == ["cifar10_cnn"]


@needs_keras_torch
def test_loss_is_the_scripts_categorical_crossentropy():
    """The scripts compile categorical_crossentropy on one-hot labels (e.g. mnist_cnn.py@2.0.8:44-45, 59); the
    Keras stacks do the same (``Workload.labels``), and the PyTorch twins' CrossEntropyLoss on integer labels
    (logits) is the same value, except for saturated predictions: Keras' loss on probabilities clips them to
    [1e-7, 1 - 1e-7] (as 2.0.8, keras/backend/tensorflow_backend.py@2.0.8:2751-2760), a logits loss does not (nor
    does Keras on TensorFlow inside ``fit``, which takes the softmax's logits: the classic table's row)."""
    import keras
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(16, 10)).astype("float32")
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = rng.integers(0, 10, 16)
    one_hot = keras.utils.to_categorical(labels, 10).astype("float32")
    cce = float(np.mean(keras.ops.convert_to_numpy(keras.losses.categorical_crossentropy(one_hot, probs))))
    loss = get_workload("mnist_cnn").labels.loss
    ours = float(keras.ops.convert_to_numpy(keras.losses.get(loss)(one_hot, probs)).mean())
    torch_ce = float(torch.nn.CrossEntropyLoss()(torch.from_numpy(logits), torch.from_numpy(labels)))
    assert loss == "categorical_crossentropy"
    assert ours == pytest.approx(cce, rel=1e-6) and torch_ce == pytest.approx(cce, rel=1e-5)
    saturated = np.array([[40.0] + [0.0] * 9], "float32")  # the true class (1) gets e^-40 of the mass
    p_sat = np.exp(saturated - saturated.max()) / np.exp(saturated - saturated.max()).sum()
    true_1 = np.eye(10, dtype="float32")[1:2]
    capped = float(keras.ops.convert_to_numpy(keras.losses.categorical_crossentropy(true_1, p_sat)).mean())
    unclipped = float(torch.nn.CrossEntropyLoss()(torch.from_numpy(saturated), torch.tensor([1])))
    assert capped == pytest.approx(-np.log(1e-7), rel=1e-4) and unclipped == pytest.approx(40.0, rel=1e-5)


@needs_torch
def test_lstm_second_bias_is_the_only_difference():
    from bench.models.engines.torch.epochs import effective_param_count

    model = get_workload("mnist_hierarchical_rnn").build_torch({"num_classes": 10})
    raw = sum(p.numel() for p in model.parameters())
    assert raw - effective_param_count(model) == 2 * 4 * 128
