"""Each workload's declared parameter count is the published one (every family's build is held to it in
tests/contract/test_parity.py), and each classic default pinned to its source (keras-team/keras
``examples/*.py@2.0.8``, ``keras/optimizers.py@2.0.8``)."""

import pytest

from bench.models import datasets
from bench.models.workloads import SUITES, WORKLOADS, get_workload
from tests.conftest import needs_keras_torch, needs_torch
from tests.contract.grid import FIT_WORKLOADS
from tests.helpers.published import PUBLISHED


def meta(name):
    return datasets.SYNTHETIC[get_workload(name).dataset]["meta"]


def test_registry():
    assert SUITES["classic"] == ["mnist_mlp", "mnist_cnn", "mnist_hierarchical_rnn", "cifar10_cnn", "babi_rnn"]
    assert SUITES["tuning"] == ["mnist_cnn_tuning"]  # the study's CNN under its own name, in its own suite
    for name in FIT_WORKLOADS:
        w = WORKLOADS[name]
        assert w.tasks == ("fit",) and set(w.epochs) == {"smoke", "full"} and w.source
    with pytest.raises(KeyError, match="known"):
        get_workload("lenet")


def test_declared_parameter_counts_are_the_published_ones():
    """``bench list`` shows ``Workload.params``; every family's build is checked against it in tests/contract."""
    assert {n: WORKLOADS[n].params for n in FIT_WORKLOADS} == PUBLISHED


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


#: Each classic workload's optimizer in its 2017 script, with Keras 2.0.8's defaults filled in
#: (keras/optimizers.py@2.0.8: RMSprop line 212, Adadelta 331, Adam 401): name, lr, rho, epsilon, beta_1, beta_2,
#: decay. cifar10_cnn: rmsprop(lr=0.0001, decay=1e-6) (examples/cifar10_cnn.py@2.0.8:65); mnist_mlp: RMSprop()
#: (mnist_mlp.py@2.0.8:47); mnist_hierarchical_rnn: 'rmsprop' (line 77); babi_rnn: 'adam' (line 212); mnist_cnn:
#: Adadelta() (line 60). mnist_cnn_tuning: the post's RMSprop lr=1e-4 with Keras 3's defaults (rmsprop.py@v3.9.2).
SOURCE_OPTIMIZERS = {
    "mnist_mlp": ("rmsprop", 0.001, 0.9, 1e-8, None, None, 0.0),
    "mnist_cnn": ("adadelta", 1.0, 0.95, 1e-8, None, None, 0.0),
    "mnist_hierarchical_rnn": ("rmsprop", 0.001, 0.9, 1e-8, None, None, 0.0),
    "cifar10_cnn": ("rmsprop", 0.0001, 0.9, 1e-8, None, None, 1e-6),
    "babi_rnn": ("adam", 0.001, None, 1e-8, 0.9, 0.999, 0.0),
    "mnist_cnn_tuning": ("rmsprop", 0.0001, 0.9, 1e-7, None, None, 0.0),
}


@pytest.mark.parametrize("name", FIT_WORKLOADS)
def test_optimizer_is_the_sources(name):
    """See ``SOURCE_OPTIMIZERS`` for each value's file@tag."""
    o = get_workload(name).optimizer
    assert (o.name, o.learning_rate, o.rho, o.epsilon, o.beta_1, o.beta_2, o.decay) == SOURCE_OPTIMIZERS[name]
    assert o.source


#: Batch and epochs of the scripts: mnist_mlp.py@2.0.8:17-19 (128, 20), mnist_cnn.py@2.0.8:16-18 (128, 12),
#: mnist_hierarchical_rnn.py@2.0.8:36-38 (32, 5), cifar10_cnn.py@2.0.8:22 (32; 200 epochs in the script, 50 in the
#: 2017 notebook that ran it: tests/models/workloads/test_notebooks.py), babi_rnn.py@2.0.8:148-149 (32, 40); the tuning
#: study's header: 256, 41.
SOURCE_BATCH_EPOCHS = {"mnist_mlp": (128, 20), "mnist_cnn": (128, 12), "mnist_hierarchical_rnn": (32, 5),
                       "cifar10_cnn": (32, 50), "babi_rnn": (32, 40), "mnist_cnn_tuning": (256, 41)}


@pytest.mark.parametrize("name", FIT_WORKLOADS)
def test_batch_and_epochs_are_the_sources(name):
    w = get_workload(name)
    assert (w.batch_size, w.epochs["full"]) == SOURCE_BATCH_EPOCHS[name]
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


def _throwaway(**kw):
    """A classic workload named ``throwaway_2017`` (no ``ONE_HOT_LINES`` entry), registered through ``_w``."""
    from bench.models.workloads import classic

    base = get_workload("mnist_mlp")
    return classic._w("throwaway_2017", dataset="mnist", batch_size=8, optimizer=base.optimizer, params=1,
                      epochs={"smoke": 1, "full": 1}, samples={"smoke": 8, "full": None},
                      build_keras=base.build_keras, build_torch=base.build_torch, **kw)


def test_a_classic_workload_missing_from_one_hot_lines_is_one_clear_error(monkeypatch):
    """Not a bare KeyError at import: the message names the workload and what to add; and a workload that gives
    its own labels needs no entry (``_w`` looks the entry up only when it must)."""
    import bench.models.workloads as registry
    from bench.models.workloads.training import INTEGER_LABELS

    monkeypatch.setattr(registry, "WORKLOADS", dict(WORKLOADS))
    monkeypatch.setattr(registry, "SUITES", {k: list(v) for k, v in SUITES.items()})
    with pytest.raises(LookupError, match=r"'throwaway_2017' has no entry in ONE_HOT_LINES .*add 'throwaway_2017'") \
            as err:
        _throwaway()
    assert not isinstance(err.value, KeyError)
    assert "throwaway_2017" not in registry.WORKLOADS
    assert _throwaway(labels=INTEGER_LABELS).labels == INTEGER_LABELS
    assert registry.SUITES["classic"][-1] == "throwaway_2017" and "throwaway_2017" not in SUITES["classic"]
