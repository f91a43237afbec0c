"""The classic and tuning suites run their sources' methods: optimizer rules and decay, cifar10_cnn's real-time
augmentation, the 2017 metric (s/epoch of the whole fit), the tuning study's torchvision and tf.data pipelines.

Each check compares with an independent implementation: the source's own formula or library call (Keras 2.0.8's
optimizer updates, ImageDataGenerator's scipy resampling, torchvision's MNIST reader), or a clock of our own.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from bench.core import knobs
from bench.core.families.jax import JaxEpochSettings
from bench.core.families.keras import KerasEpochSettings
from bench.core.families.torch import TorchEpochSettings
from bench.models import datasets
from bench.models.datasets import Dataset
from bench.models.workloads import SUITES, get_workload
from tests.conftest import needs_keras_torch, needs_torch
from tests.contract.grid import FIT_WORKLOADS
from tests.helpers.cells import engine_cell
from tests.helpers.optimizers import GRADS, P0, reference, rmsprop_208, with_decay
from tests.helpers.tables import has_cells

# ---- optimizers: Keras 2.0.8's update rules (keras/optimizers.py@2.0.8), transcribed --------------------------


def keras_steps(w) -> np.ndarray:
    import keras

    from bench.models.engines.keras.epochs import make_optimizer

    var = keras.Variable(P0.astype("float32"))
    opt = make_optimizer(keras, w)
    for g in GRADS:
        opt.apply_gradients([(keras.ops.convert_to_tensor(g.astype("float32")), var)])
    return keras.ops.convert_to_numpy(var).astype(np.float64)


def torch_steps(w) -> np.ndarray:
    import torch

    from bench.models.engines.torch.epochs import make_optimizer, make_scheduler

    p = torch.nn.Parameter(torch.tensor(P0, dtype=torch.float64))
    opt = make_optimizer(torch, [p], w)
    sched = make_scheduler(torch, opt, w)
    for g in GRADS:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        if sched is not None:
            sched.step()
    return p.detach().numpy()


@needs_torch
@pytest.mark.parametrize("name, decay", [("mnist_cnn", 0.0), ("cifar10_cnn", 1e-6), ("cifar10_cnn", 0.5),
                                         ("mnist_mlp", 0.0)])
def test_torch_optimizer_is_keras_208s_rule(name, decay):
    """PyTorch's RMSprop (eps added to the root) and Adadelta are Keras 2.0.8's rules; the decay is its
    lr / (1 + decay * t) (a decay of 0.5 makes the schedule visible in three steps)."""
    w = with_decay(name, decay)
    np.testing.assert_allclose(torch_steps(w), reference(w), rtol=1e-12, atol=1e-12)
    if decay == 0.5:  # the schedule matters: without it the result differs
        assert not np.allclose(torch_steps(with_decay(name, 0.0)), reference(w), rtol=1e-6)


@needs_torch
def test_torch_adam_differs_from_keras_208_only_by_where_eps_goes():
    """torch/optim/adam.py@v2.13.0:544 adds eps after the bias correction, Keras 2.0.8 (and 3) before it:
    documented in docs/suites/classic.md ("Method vs the sources"); with these gradients the difference is below
    1e-6."""
    w = get_workload("babi_rnn")
    np.testing.assert_allclose(torch_steps(w), reference(w), rtol=0, atol=1e-6)


@needs_keras_torch
@pytest.mark.parametrize("name, decay", [("mnist_cnn", 0.0), ("babi_rnn", 0.0), ("cifar10_cnn", 0.5)])
def test_keras_optimizer_rule_against_keras_208(name, decay):
    """Keras 3's Adadelta and Adam are 2.0.8's rules; its RMSprop takes eps inside the root
    (keras/src/optimizers/rmsprop.py@v3.15.1:143-145): exactly 2.0.8's rule with that one change, the decay as
    InverseTimeDecay included."""
    w = with_decay(name, decay)
    o = w.optimizer
    if o.name == "rmsprop":
        expected = rmsprop_208(GRADS, P0, o.learning_rate, o.rho, o.epsilon, o.decay, eps_inside=True)
    else:
        expected = reference(w)
    np.testing.assert_allclose(keras_steps(w), expected, rtol=1e-5, atol=1e-7)


@needs_keras_torch
@pytest.mark.parametrize("name", FIT_WORKLOADS)
def test_engines_build_the_workloads_optimizer_and_record_it(name):
    """What both engines build, read back from the optimizer objects (the record's settings.optimizer), is the
    workload's ``OptimizerSpec`` (pinned to the sources in test_workloads.py)."""
    import keras
    import torch

    from bench.models.engines.keras import epochs as keras_epochs
    from bench.models.engines.torch import epochs as torch_epochs

    w = get_workload(name)
    o = w.optimizer
    k = keras_epochs.optimizer_record(keras_epochs.make_optimizer(keras, w))
    t = torch_epochs.optimizer_record(torch_epochs.make_optimizer(torch, [torch.nn.Parameter(torch.ones(1))], w), w)
    to = o.for_engine("torch")  # mnist_cnn_tuning: torch's own RMSprop defaults on PyTorch
    assert k["learning_rate"] == pytest.approx(o.learning_rate) == t["learning_rate"]
    assert k["epsilon"] == pytest.approx(o.epsilon) and t["eps"] == pytest.approx(to.epsilon)
    if o.name == "rmsprop":
        assert k["rho"] == pytest.approx(o.rho) and t["alpha"] == pytest.approx(to.rho)
    if o.name == "adadelta":
        assert k["rho"] == pytest.approx(o.rho) and t["rho"] == pytest.approx(o.rho)
    if o.name == "adam":
        assert (k["beta_1"], k["beta_2"]) == pytest.approx((o.beta_1, o.beta_2)) and t["betas"] == [0.9, 0.999]
    if o.decay:
        assert k["lr_schedule"] == {"class": "InverseTimeDecay", "decay_steps": 1, "decay_rate": o.decay,
                                    "staircase": False}
        assert t["lr_schedule"]["decay"] == o.decay
    else:
        assert k["lr_schedule"] is None and t["lr_schedule"] is None


# ---- cifar10_cnn's augmentation: ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1, ----------
# ---- horizontal_flip=True) as keras/preprocessing/image.py@2.0.8 did it --------------------------------------

def source_shift(image: np.ndarray, tx: float, ty: float) -> np.ndarray:
    """ImageDataGenerator.random_transform's shift of one (H, W, C) image by (tx rows, ty columns), as
    keras/preprocessing/image.py@2.0.8:555-604 and apply_transform (lines 195-209) did it: scipy's
    affine_transform with the identity matrix, offset (tx, ty), order=0, mode 'nearest' (the default fill)."""
    from scipy import ndimage as ndi

    return np.stack([ndi.affine_transform(image[..., c], np.eye(2), (tx, ty), order=0, mode="nearest", cval=0.0)
                     for c in range(image.shape[-1])], axis=-1)


#: P(shift = k pixels) per axis for a 32-pixel side and range 0.1: round(uniform(-3.2, 3.2)).
SHIFT_P = {k: (0.7 if abs(k) == 3 else 1.0) / 6.4 for k in range(-3, 4)}


def source_outputs(image: np.ndarray) -> dict[bytes, tuple[int, int, bool]]:
    """Every output the source's transform can give from ``image`` (shifts of at most 3 pixels, flipped or not),
    keyed by its bytes, with the (rows, columns, flip) that gives it."""
    out = {}
    for flip in (False, True):
        for tx in range(-3, 4):
            for ty in range(-3, 4):
                cand = source_shift(image, tx, ty)
                out[np.ascontiguousarray(cand[:, ::-1] if flip else cand).tobytes()] = (tx, ty, flip)
    return out


def identify(out: np.ndarray, outputs: dict[bytes, tuple[int, int, bool]]) -> tuple[int, int, bool]:
    """The shift and flip that give ``out`` (``source_outputs``). Raises AssertionError when none does."""
    key = np.ascontiguousarray(out, dtype=np.float32).tobytes()
    assert key in outputs, "the augmented image is no shift of at most 3 pixels (edge-filled) and flip of the input"
    return outputs[key]


def check_distribution(found: list[tuple[int, int, bool]]) -> None:
    """Per-axis shift frequencies and the flip rate within 4.5 binomial standard deviations of the source's."""
    n = len(found)
    for axis in (0, 1):
        for k, p in SHIFT_P.items():
            count = sum(f[axis] == k for f in found)
            assert abs(count - n * p) <= 4.5 * np.sqrt(n * p * (1 - p)), (axis, k, count, n * p)
    flips = sum(f[2] for f in found)
    assert abs(flips - n / 2) <= 4.5 * np.sqrt(n / 4)


def test_source_shift_moves_by_the_rounded_amount():
    """The reference itself: order=0 turns a shift of 2.6 into 3 pixels, the edge repeated (mode 'nearest')."""
    img = np.arange(32 * 32 * 3, dtype=np.float32).reshape(32, 32, 3)
    out = source_shift(img, 2.6, -1.2)
    assert np.array_equal(out[:29, 1:], img[3:, :31]) and np.array_equal(out[29:, 0], np.repeat(img[31:, 0], 3, 0))


def distinct_image(h=32, w=32, c=3) -> np.ndarray:
    return (np.random.default_rng(1).permutation(h * w * c).reshape(h, w, c) / (h * w * c)).astype(np.float32)


@needs_torch
def test_torch_augmentation_is_the_source_transform_with_its_shift_distribution():
    """torchvision's Pad(edge) + RandomAffine + CenterCrop + RandomHorizontalFlip gives, image by image, one of
    the source's outputs, with the source's distribution of shifts and flips."""
    import torch

    from bench.models.engines.torch.data import augment_transform

    torch.manual_seed(0)
    image = distinct_image()
    transform = augment_transform(get_workload("cifar10_cnn").augmentation, 32, 32)
    chw = torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1)))
    outputs = source_outputs(image)
    found = [identify(transform(chw).numpy().transpose(1, 2, 0), outputs) for _ in range(600)]
    check_distribution(found)


@needs_torch
def test_torch_augmented_loader_is_one_worker_ten_batches_queued_full_batches(tmp_path):
    """fit_generator's workers=1, max_queue_size=10 (keras/engine/training.py@2.0.8:1839-1840) and the script's
    steps_per_epoch = n // batch; pinned memory only for a CUDA device (the GPU branch, checked without one)."""
    import torch

    from bench.models.engines.torch.data import augmented_loader

    w = get_workload("cifar10_cnn")
    ds = datasets.synthetic("cifar10", 70, 8, "test")
    loader, how = augmented_loader(torch, w.augmentation, ds, w, 32, torch.device("cpu"))
    assert (loader.num_workers, loader.prefetch_factor, loader.drop_last, loader.persistent_workers) == \
        (1, 10, True, True)
    assert loader.pin_memory is False and len(loader) == 70 // 32
    assert (how["pin_memory"], how["persistent_workers"]) == (False, True)  # as they took effect, disclosed
    assert how["where"].startswith("host (DataLoader") and "RandomAffine" in how["implementation"]
    gpu_loader, gpu_how = augmented_loader(torch, w.augmentation, ds, w, 32, torch.device("cuda"))
    assert gpu_loader.pin_memory is True and gpu_how["pin_memory"] is True
    xb, yb = next(iter(loader))
    assert tuple(xb.shape) == (32, 3, 32, 32) and yb.dtype == torch.int64
    with pytest.raises(ValueError, match="batch 128 is larger than the 70 training examples"):
        augmented_loader(torch, w.augmentation, ds, w, 128, torch.device("cpu"))


@needs_keras_torch
def test_keras_augmentation_in_tf_data_is_the_source_transform_with_its_shift_distribution():
    """The Keras pipeline (RandomTranslation + RandomFlip mapped per image in tf.data, one thread, 10 batches
    queued) gives, image by image, one of the source's outputs with the source's distribution; n // batch steps."""
    import keras

    from bench.models.engines.keras.data import augmented_train_data

    keras.utils.set_random_seed(0)
    image = distinct_image()
    n = 480
    ds = Dataset("cifar10", (np.repeat(image[None], n, 0),), np.arange(n, dtype=np.int32),
                 (image[None],), np.zeros(1, np.int32), {"num_classes": 10})
    fit_kw, how = augmented_train_data(keras, get_workload("cifar10_cnn").augmentation, ds, 32)
    data = fit_kw["x"]
    assert int(data.cardinality()) == n // 32 and how["shuffle_buffer"] == n
    assert data.options().threading.private_threadpool_size == 1
    assert "fill_mode='nearest', interpolation='nearest'" in how["implementation"]
    found, labels, outputs = [], [], source_outputs(image)
    for xb, yb in data.as_numpy_iterator():
        found += [identify(x, outputs) for x in xb]
        labels += list(yb)
    assert sorted(labels) == list(range(n)) and labels != sorted(labels)  # each image once, shuffled
    check_distribution(found)


def test_augment_knob_is_a_variant_with_clear_limits():
    """augment unset: the source decides; false: off (a variant); true where the source has none, or with another
    data pipeline: a reason (the cell is recorded unsupported)."""
    K, T = KerasEpochSettings, TorchEpochSettings
    assert K().augment is None and "augment" in knobs.KNOBS["keras"] and "augment" in knobs.KNOBS["torch"]
    assert knobs.augment_in_effect(K(), True) and not knobs.augment_in_effect(K(augment=False), True)
    assert not knobs.augment_in_effect(K(), False)
    assert knobs.augmentation_problem(K(augment=True), "mnist_mlp", False) == \
        "augment=true: mnist_mlp's source has no augmentation"
    assert "add augment=false" in knobs.augmentation_problem(K(data_pipeline="tensors_fit"), "cifar10_cnn", True)
    assert "num_workers=6" in knobs.augmentation_problem(T(num_workers=6), "cifar10_cnn", True)
    assert knobs.augmentation_problem(T(data_pipeline="tensor_dataset", augment=False), "cifar10_cnn", True) is None
    assert knobs.variant_name({"augment": False}) == "augment=false"


def test_no_augment_flag_is_one_variant():
    from bench.core.request import Request
    from bench.run import plan

    kw = Request(no_augment=True).variant_settings()
    assert kw == {"settings": {"augment": False}, "variant": "augment=false"}
    cells = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["cifar10_cnn"], **kw)
    assert [(c.variant, c.settings) for c in cells] == [("augment=false", {"augment": False})]
    assert Request(compile_mode="default", no_augment=True).variant_settings()["variant"] == \
        "compile-default+augment=false"
    assert Request().variant_settings() == {}


# ---- the 2017 metric: s/epoch of the whole fit ------------------------------------------------------------------

def small(name: str, n: int = 64) -> tuple:
    w = get_workload(name)
    w = dataclasses.replace(w, samples={"smoke": n, "full": None})
    return w, w.load_data("smoke", "synthetic")


SETUP_S, VAL_S = 0.5, 0.15  # a slow setup before the first epoch; a slow validation in every epoch


@needs_keras_torch
def test_keras_2017_metric_is_the_whole_fit_call_over_the_epochs_setup_and_validation_included(monkeypatch):
    """fit_call_s_per_epoch as the 2017 notebooks timed fit (%timeit of the whole model.fit call, over the epochs,
    keras_perf_test_mnist_mlp.ipynb@fa5f333:156): a slow setup before the first epoch (a slow on_train_begin) and a
    slow validation are both inside it. fit_epoch_s keeps each epoch's begin-to-validation span (setup outside).
    Against an independent clock: a separate callback's own times and the sleeps it adds."""
    import keras

    from bench.core.stacks import get_stack
    from bench.models.engines.keras import epochs as keras_epochs

    seen: list[float] = []

    class Slow(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            time.sleep(SETUP_S)

        def on_test_end(self, logs=None):
            time.sleep(VAL_S)

        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seen.append(time.perf_counter() - self.t0)

    real_fit = keras.Model.fit
    monkeypatch.setattr(keras.Model, "fit", lambda self, *a, callbacks=(), **k:
                        real_fit(self, *a, callbacks=[Slow(), *callbacks], **k))
    w, ds = small("mnist_mlp", 256)
    out = keras_epochs.fit(get_stack("keras3-torch"), w, ds, engine_cell("keras3-torch", w, 3, 64),
                           KerasEpochSettings())
    m = out.metrics.model_dump(exclude_unset=True)
    assert m["fit_call_s_per_epoch"] == pytest.approx(m["fit_call_s"] / 3)
    assert m["fit_call_s_per_epoch"] >= (SETUP_S + 3 * VAL_S) / 3  # setup and every validation inside it
    assert m["fit_call_s"] >= sum(seen) + SETUP_S
    assert "fit_s_per_epoch" not in m  # schema 3's field, whose meaning changed, is not written
    assert len(m["fit_epoch_s"]) == len(seen) == 3
    assert m["fit_epoch_s"] == pytest.approx(seen, rel=0.05, abs=0.01)
    assert min(m["fit_epoch_s"]) > VAL_S  # validation inside each span
    assert m["fit_epoch_s_mean"] == pytest.approx(sum(m["fit_epoch_s"]) / 3)
    assert m["fit_call_s"] - sum(m["fit_epoch_s"]) >= SETUP_S  # the setup: in the call, in no span


def _timed(monkeypatch, engine, slow_val: bool = True) -> list[float]:
    """Wrap ``engine._evaluate`` (each epoch's validation) with a clock and a ``VAL_S`` sleep; the list fills with
    each validation's seconds."""
    evals: list[float] = []
    real_eval = engine._evaluate

    def timed_eval(*a, **k):
        t0 = time.perf_counter()
        out = real_eval(*a, **k)
        if slow_val:
            time.sleep(VAL_S)
        evals.append(time.perf_counter() - t0)
        return out

    monkeypatch.setattr(engine, "_evaluate", timed_eval)
    return evals


def _check_loop_epochs(m: dict, evals: list[float], epochs: int) -> None:
    """Each fit_epoch_s is that epoch's training steps (the timer's epoch_s) plus its validation (timed apart),
    up to bookkeeping; their mean is fit_epoch_s_mean; the whole loop holds them all, and over the epochs it is the
    2017 metric, fit_call_s_per_epoch."""
    assert len(m["fit_epoch_s"]) == len(evals) == epochs
    inner = [t + v for t, v in zip(m["epoch_s"], evals, strict=True)]
    for got, want in zip(m["fit_epoch_s"], inner, strict=True):
        assert want <= got <= want * 1.05 + 0.02
    assert min(m["fit_epoch_s"]) > VAL_S
    assert m["fit_epoch_s_mean"] == pytest.approx(sum(m["fit_epoch_s"]) / epochs)
    assert sum(m["fit_epoch_s"]) <= m["fit_call_s"] <= sum(m["fit_epoch_s"]) * 1.05 + 0.02
    assert m["fit_call_s_per_epoch"] == pytest.approx(m["fit_call_s"] / epochs) and "fit_s_per_epoch" not in m


@needs_torch
def test_torch_2017_metric_is_the_whole_loop_with_each_epochs_validation(monkeypatch):
    from bench.core.stacks import get_stack
    from bench.models.engines.torch import epochs as torch_epochs

    evals = _timed(monkeypatch, torch_epochs)
    w, ds = small("mnist_mlp", 512)
    out = torch_epochs.fit(get_stack("pytorch"), w, ds, engine_cell("pytorch", w, 3, 64), TorchEpochSettings())
    _check_loop_epochs(out.metrics.model_dump(exclude_unset=True), evals, 3)


def test_jax_2017_metric_is_the_whole_loop_with_each_epochs_validation(monkeypatch):
    pytest.importorskip("flax")
    from bench.core.stacks import get_stack
    from bench.models.engines.jax import epochs as jax_epochs

    evals = _timed(monkeypatch, jax_epochs)
    w, ds = small("mnist_mlp", 512)
    out = jax_epochs.fit(get_stack("jax"), w, ds, engine_cell("jax", w, 3, 64), JaxEpochSettings())
    _check_loop_epochs(out.metrics.model_dump(exclude_unset=True), evals, 3)


def test_epoch_clock_barriers_before_each_read_and_ignores_an_unopened_end():
    from bench.instruments.timing import EpochClock

    calls: list[str] = []
    ec = EpochClock(lambda: calls.append("barrier"))
    ec.end()
    assert ec.epoch_s == [] and calls == []
    ec.begin()
    time.sleep(0.05)
    ec.end()
    assert calls == ["barrier", "barrier"] and ec.epoch_s[0] >= 0.05


def test_fit_metrics_rejects_nonsense():
    from bench.instruments.timing import fit_metrics

    assert fit_metrics([1.0, 3.0], 6.5) == {"fit_call_s": 6.5, "fit_call_s_per_epoch": 3.25,
                                            "fit_epoch_s": [1.0, 3.0], "fit_epoch_s_mean": 2.0}
    assert fit_metrics([2.0], 2.5)["fit_call_s_per_epoch"] == 2.5
    for bad in (([], 1.0), ([float("nan")], 2.0), ([1.0], -1.0)):
        with pytest.raises(ValueError, match="fit_metrics needs"):
            fit_metrics(*bad)


# ---- the tuning study's pipelines ---------------------------------------------------------------------------

def mnist_like(n_train: int, n_val: int) -> Dataset:
    """Synthetic MNIST with pixels that are exact multiples of 1/255, as the real data's."""
    ds = datasets.synthetic("mnist", n_train, n_val, "test")
    q = lambda x: (np.rint(x * 255) / 255).astype(np.float32)  # noqa: E731
    return Dataset("mnist", (q(ds.x_train[0]),), ds.y_train, (q(ds.x_val[0]),), ds.y_val, ds.meta, "synthetic")


@needs_torch
def test_idx_files_read_back_by_torchvision(tmp_path):
    from torchvision.datasets.mnist import read_image_file, read_label_file

    from bench.models.engines.torch.data import write_mnist_idx

    ds = mnist_like(20, 6)
    raw = write_mnist_idx(tmp_path, ds)
    images = read_image_file(str(raw / "train-images-idx3-ubyte")).numpy()
    assert np.array_equal(images, np.rint(ds.x_train[0][..., 0] * 255).astype(np.uint8))
    assert np.array_equal(read_label_file(str(raw / "t10k-labels-idx1-ubyte")).numpy(), ds.y_val)


@needs_torch
def test_torchvision_pipeline_is_torchvision_mnist_with_totensor_and_normalize():
    """The study's PyTorch "torchvision dataset" rows: torchvision.datasets.MNIST with Compose([ToTensor(),
    Normalize((0.1307,), (0.3081,))]) per item; every item is (uint8 / 255 - 0.1307) / 0.3081 of one training
    image, with its label."""
    import torch
    import torchvision

    from bench.models.engines.torch.data import MNIST_NORMALIZE, make_batches, torchvision_mnist

    assert MNIST_NORMALIZE == ((0.1307,), (0.3081,))
    ds = mnist_like(24, 6)
    dataset = torchvision_mnist(ds)
    assert isinstance(dataset, torchvision.datasets.MNIST)
    expected = (ds.x_train[0][..., 0] - 0.1307) / 0.3081
    settings = TorchEpochSettings(data_pipeline="torchvision_dataset_transforms")
    epoch = make_batches(torch, "torchvision_dataset_transforms", settings, ds, get_workload("mnist_cnn_tuning"), 8,
                         torch.device("cpu"))
    seen = []
    for (xb,), yb in epoch():
        for x, y in zip(xb, yb, strict=True):
            i = next(i for i in range(len(expected)) if np.allclose(x[0].numpy(), expected[i], atol=1e-6))
            assert int(y) == ds.y_train[i]
            seen.append(i)
    assert sorted(seen) == list(range(24))


@needs_torch
def test_torchvision_pipeline_needs_mnist():
    from bench.models.engines import Unsupported
    from bench.models.engines.torch.data import torchvision_mnist

    with pytest.raises(Unsupported, match="torchvision.datasets.MNIST"):
        torchvision_mnist(datasets.synthetic("cifar10", 4, 2, "test"))


@needs_keras_torch
def test_tf_data_shuffles_from_the_studys_buffer_of_20000():
    """The tuning suite's tf.data pipeline shuffles from a buffer of 20,000 (the post's shuffle width for its
    tf.data runs: bench.core.reference.tuning_study): element i of an epoch comes from the first 20,000 + i
    examples (a whole-set shuffle would draw from all 25,000 at once)."""
    import keras

    from bench.core.reference.tuning_study import TF_DATA_SHUFFLE_BUFFER
    from bench.models.engines.keras.data import shuffle_buffer, train_data

    assert TF_DATA_SHUFFLE_BUFFER == 20_000 and shuffle_buffer("tf_data_numpy", 1000) == 1000
    assert shuffle_buffer("numpy_fit", 25_000) == 25_000
    n = 25_000
    ds = Dataset("x", (np.arange(n, dtype=np.float32)[:, None],), np.zeros(n, np.int32), (np.zeros((1, 1)),),
                 np.zeros(1, np.int32))
    for pipeline in ("tf_data_numpy", "tf_data_tensors"):
        data = train_data(keras, pipeline, ds, 1)["x"]
        first = [int(x[0, 0]) for x, _ in data.take(300).as_numpy_iterator()]
        assert all(v < 20_000 + i for i, v in enumerate(first)), pipeline
        assert len(set(first)) == 300


def test_synthetic_images_are_learnable_from_their_class_colour():
    """A smoke run's loss must fall (the correctness gate): each synthetic image is noise plus half its class's
    colour, so the mean colour alone tells the class (and survives shifts and flips)."""
    ds = datasets.synthetic("cifar10", 400, 10, "test")
    x = ds.x_train[0]
    assert x.min() >= 0 and x.max() < 1 and x.dtype == np.float32
    means = x.mean(axis=(1, 2))
    centroids = np.stack([means[ds.y_train == c].mean(0) for c in range(10)])
    nearest = np.argmin(((means[:, None] - centroids[None]) ** 2).sum(-1), axis=1)
    assert (nearest == ds.y_train).mean() > 0.95


def test_classic_table_shows_the_2017_metric_beside_ms_per_step():
    """The report's classic table: ms/step · s/epoch (fit_call_s_per_epoch), and says the latter is the 2017 metric,
    the whole call over the epochs; a record of schema 3 (fit_s_per_epoch only) is marked as such, with its note;
    a record from before either keeps its ms/step alone."""
    import pandas as pd

    from bench.results.report.classic import LEGACY_NOTE, classic_section
    from bench.results.report.common import Footnotes

    base = {"suite": "classic", "workload": "mnist_cnn", "task": "fit", "size": "full", "variant": "default",
            "status": "ok", "data.source": "real"}
    df = pd.DataFrame([{**base, "stack": "keras3-jax", "metrics.ms_per_step_mean": 3.0,
                        "metrics.fit_call_s_per_epoch": 12.345, "metrics.fit_s_per_epoch": 9.0},
                       {**base, "stack": "keras3-tf", "metrics.ms_per_step_mean": 2.0,
                        "metrics.fit_s_per_epoch": 7.0},
                       {**base, "stack": "pytorch", "metrics.ms_per_step_mean": 4.0}])
    table = "\n".join(classic_section(df, Footnotes()))
    assert has_cells(table, ["mnist_cnn", "fit", "2.00 · 7.00 s/epoch†", "3.00 · 12.35 s/epoch", "4.00"])
    assert "s/epoch (the 2017 metric)" in table and "`metrics.fit_call_s_per_epoch`: the whole training call" in table
    assert LEGACY_NOTE in table
    assert LEGACY_NOTE not in "\n".join(classic_section(df.iloc[[0, 2]], Footnotes()))


@needs_keras_torch
def test_the_2017_lstms_keep_keras_2_0_8s_hard_sigmoid_gate_and_off_cudnn(monkeypatch):
    """keras/layers/recurrent.py@2.0.8:971: LSTM(recurrent_activation='hard_sigmoid'), i.e. clip(0.2 x + 0.5, 0, 1)
    (keras/backend/tensorflow_backend.py@2.0.8:2850), which no cuDNN kernel implements: the 2017 comparison timed the
    generic LSTM loop. Today's default gate (sigmoid) would send every Keras stack to cuDNN on a GPU (keras 3.15.1
    backend/torch/rnn.py cudnn_ok; the same test on TensorFlow and JAX)."""
    import importlib

    import keras

    from bench.models.workloads.babi_rnn.models import build_keras as babi_keras
    from bench.models.workloads.mnist_hierarchical_rnn.models import build_keras as hrnn_keras

    torch_rnn = importlib.import_module("keras.src.backend.torch.rnn")  # the package exports a function `rnn` too

    monkeypatch.setattr(torch_rnn, "_is_cuda_cudnn_available", lambda: True)  # as on a GPU
    hrnn = hrnn_keras(keras, {"num_classes": 10})
    babi = babi_keras(keras, {"story_maxlen": 20, "query_maxlen": 5, "vocab_size": 30})
    lstms = [hrnn.layers[1].layer, hrnn.layers[2]] + [x for x in babi.layers if isinstance(x, keras.layers.LSTM)]
    assert len(lstms) == 4
    x = keras.ops.convert_to_tensor(np.array([-3.0, -2.5, -1.0, 0.0, 1.0, 2.5, 3.0], np.float32))
    for layer in lstms:
        gate = layer.cell.recurrent_activation
        np.testing.assert_allclose(keras.ops.convert_to_numpy(gate(x)), np.clip(0.2 * np.asarray(x) + 0.5, 0, 1),
                                   rtol=1e-6)
        assert not torch_rnn.cudnn_ok(layer.cell.activation, gate, layer.unroll, layer.cell.use_bias)
    assert torch_rnn.cudnn_ok(keras.activations.tanh, keras.layers.LSTM(4).cell.recurrent_activation, False, True)


# ---- the scripts' labels and loss, the notebooks' progress callback; jit_compile as in effect -------------------

class _Captured(Exception):
    """Raised by a capturing ``Model.fit`` once it has what ``fit`` was given."""


def _fit_args(monkeypatch, name: str, n: int = 64, **settings) -> dict:
    """What ``keras_epochs.fit`` hands ``Model.fit`` (and ``compile``) for workload ``name``, without training."""
    import keras

    from bench.core.stacks import get_stack
    from bench.models.engines.keras import epochs as keras_epochs

    seen: dict = {}
    real_compile = keras.Model.compile

    def compile_(self, *a, **k):
        seen["compile"] = k
        return real_compile(self, *a, **k)

    def fit_(self, *a, **k):
        seen["fit"] = k
        raise _Captured

    monkeypatch.setattr(keras.Model, "compile", compile_)
    monkeypatch.setattr(keras.Model, "fit", fit_)
    w, ds = small(name, n)
    with pytest.raises(_Captured):
        keras_epochs.fit(get_stack("keras3-torch"), w, ds, engine_cell("keras3-torch", w, 1, 16),
                         KerasEpochSettings(**settings))
    seen["ds"] = ds
    return seen


def _first_batch_labels(data) -> np.ndarray:
    return next(iter(data))[1].numpy()


@needs_keras_torch
@pytest.mark.parametrize("name", ["mnist_mlp", "mnist_cnn", "mnist_hierarchical_rnn", "babi_rnn"])
def test_keras_classic_cells_train_on_the_scripts_one_hot_labels_with_categorical_crossentropy(monkeypatch, name):
    """examples/<name>.py@2.0.8: to_categorical on the host, categorical_crossentropy, metrics ['accuracy']."""
    seen = _fit_args(monkeypatch, name)
    ds, fit_kw = seen["ds"], seen["fit"]
    n_classes = ds.meta["num_classes"]
    y, y_val = fit_kw["y"], fit_kw["validation_data"][1]
    assert y.shape == (ds.n_train, n_classes) and y.dtype == np.float32
    assert np.array_equal(y.argmax(1), ds.y_train) and np.all(y.sum(1) == 1)
    assert np.array_equal(y_val.argmax(1), ds.y_val) and y_val.shape[1] == n_classes
    assert seen["compile"]["loss"] == "categorical_crossentropy" and seen["compile"]["metrics"] == ["accuracy"]


@needs_keras_torch
def test_augmented_and_tf_data_pipelines_get_the_same_one_hot_labels(monkeypatch):
    aug = _fit_args(monkeypatch, "cifar10_cnn", 64)
    assert _first_batch_labels(aug["fit"]["x"]).shape == (16, 10)
    tfd = _fit_args(monkeypatch, "mnist_mlp", 64, data_pipeline="tf_data_numpy")
    labels = _first_batch_labels(tfd["fit"]["x"])
    assert labels.shape == (16, 10) and np.all(labels.sum(1) == 1)


@needs_keras_torch
def test_tuning_workload_keeps_integer_labels_and_the_sparse_loss(monkeypatch):
    seen = _fit_args(monkeypatch, "mnist_cnn_tuning")
    assert np.array_equal(seen["fit"]["y"], seen["ds"].y_train)
    assert seen["compile"]["loss"] == "sparse_categorical_crossentropy"


def test_label_form_is_the_workloads_source():
    from bench.models.workloads.training import Labels

    for name in SUITES["classic"]:
        lab = get_workload(name).labels
        assert (lab.form, lab.loss, lab.metrics) == ("one_hot", "categorical_crossentropy", ("accuracy",))
        assert lab.source.startswith(f"examples/{name}.py@2.0.8:")
    assert get_workload("mnist_cnn_tuning").labels.form == "integer"
    with pytest.raises(ValueError, match="label form"):
        Labels("soft", "x")


@needs_keras_torch
def test_keras_fit_runs_the_notebooks_callback_by_default_and_the_bar_as_a_variant(monkeypatch, capfd):
    """Classic: fit(verbose=0) and a callback whose on_batch_end reads every batch's logs but the epoch's last, as the
    2017 notebooks' TQDMNotebookCallback (keras_tqdm/tqdm_callback.py@v2.0.1:110-122); no ProgbarLogger. progress=bar
    is Keras' bar (the old default), written to a discarded stream; progress=none neither. Each record says which
    ran, with the loss and labels it trained on and jit_compile as the model compiled it."""
    import keras

    from bench.core.stacks import get_stack
    from bench.models.engines.keras import epochs as keras_epochs
    from bench.models.engines.keras import progress

    bar: list[int] = []
    real = keras.callbacks.ProgbarLogger.on_train_batch_end
    monkeypatch.setattr(keras.callbacks.ProgbarLogger, "on_train_batch_end",
                        lambda self, batch, logs=None: (bar.append(batch), real(self, batch, logs))[1])
    made: list = []
    real_cb = progress.notebook_callback
    monkeypatch.setattr(progress, "notebook_callback", lambda k: made.append(real_cb(k)) or made[-1])
    w, ds = small("mnist_mlp", 64)
    out = keras_epochs.fit(get_stack("keras3-torch"), w, ds, engine_cell("keras3-torch", w, 2, 16),
                           KerasEpochSettings())
    s = out.settings.model_dump(exclude_unset=True)
    assert bar == [] and len(made) == 1
    assert set(made[0].running) == {"loss", "accuracy"} and len(made[0].running["loss"]) == 4 - 1  # last batch unread
    assert made[0].description.startswith("accuracy: ") and ", loss: " in made[0].description
    assert (s["progress"], s["verbose"], s["batch_end_hook"]) == ("keras_tqdm", 0, True)
    assert s["loss"] == "categorical_crossentropy" and s["labels"]["form"] == "one_hot"
    assert s["jit_compile"] is False and s["jit_compile_requested"] == "keras default"  # auto: off on torch
    for form, verbose, batches in (("bar", 1, 2 * 4), ("none", 0, 0)):
        bar.clear()
        got = keras_epochs.fit(get_stack("keras3-torch"), w, ds, engine_cell("keras3-torch", w, 2, 16),
                            KerasEpochSettings(progress=form)).settings.model_dump(exclude_unset=True)
        assert len(bar) == batches and len(made) == 1
        assert (got["progress"], got["verbose"], got["batch_end_hook"]) == (form, verbose, False)
    captured = capfd.readouterr()
    assert "Epoch 1/2" not in captured.out + captured.err and "step" not in captured.out


@needs_keras_torch
def test_the_tuning_suite_keeps_keras_own_progress_bar():
    """The tuning study ran Keras' fit with its default verbose (the bar): its workload's source form stays ``bar``,
    only the classic workloads' is the 2017 notebooks' callback."""
    from bench.models.engines.keras.progress import fit_progress

    assert get_workload("mnist_cnn_tuning").progress == "bar"
    assert {get_workload(n).progress for n in FIT_WORKLOADS if n != "mnist_cnn_tuning"} == {"keras_tqdm"}
    import keras

    assert fit_progress(keras, "bar") == (1, [])
    verbose, cbs = fit_progress(keras, "keras_tqdm")
    assert verbose == 0 and [type(c).__name__ for c in cbs] == ["NotebookBatchLogs"]
    with pytest.raises(ValueError, match="unknown progress form"):
        fit_progress(keras, "tqdm")


@needs_keras_torch
def test_a_batch_end_hook_turns_off_keras_async_callback_dispatch_on_torch():
    """keras/src/callbacks/callback_list.py@v3.15.1:59-84: on a thread-safe backend (PyTorch here) Keras dispatches
    batch-end callbacks in a thread pool unless a callback overrides on_batch_end / on_train_batch_end; the
    notebooks' callback does, the epoch-edge timing callback does not. The record's flag is Keras' own check."""
    import keras

    from bench.instruments.timing import EPOCH, EpochTimer
    from bench.models.engines.keras.progress import notebook_callback, overrides_batch_end, progress_record
    from bench.models.engines.keras.runtime import make_timing_callback

    edges = make_timing_callback(keras, EpochTimer(lambda: None, cadence=EPOCH))
    nb = notebook_callback(keras)
    assert not overrides_batch_end(keras, edges) and overrides_batch_end(keras, nb)
    assert keras.callbacks.CallbackList([edges])._async_train is True
    assert keras.callbacks.CallbackList([edges, nb])._async_train is False
    assert progress_record(keras, "keras_tqdm", 0, [edges, nb]) == {
        "progress": "keras_tqdm", "verbose": 0, "batch_end_hook": True, "keras_async_batch_end": False,
        "keras_async_test_batch_end": True}  # keras_tqdm has no test hook: validation stays asynchronous
    assert progress_record(keras, "bar", 1, [edges])["keras_async_batch_end"] is True

    class TestHook(keras.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            pass

    assert progress_record(keras, "none", 0, [edges, TestHook()])["keras_async_test_batch_end"] is False


def test_progress_bar_discarded_only_with_verbose(capsys):
    from bench.models.engines.keras.epochs import progress_bar_discarded

    with progress_bar_discarded(1):
        print("bar")
    with progress_bar_discarded(0):
        print("log")
    assert capsys.readouterr().out == "log\n"


def test_fit_variants_are_named_and_listed():
    from click.testing import CliRunner

    from bench.cli import cli

    assert KerasEpochSettings().progress is None and KerasEpochSettings().jit_compile is None  # the source decides
    assert knobs.variant_name({"progress": "bar"}) == "progress=bar"
    assert knobs.parse_assignment("progress=bar") == ("progress", "bar")
    assert knobs.parse_assignment("jit_compile=false") == ("jit_compile", False)
    for cmd in (["knobs"], ["list"]):
        text = CliRunner().invoke(cli, cmd).output
        assert "--set jit_compile=false" in text and "--set progress=bar" in text and "--set progress=none" in text


@pytest.mark.skipif(not __import__("importlib.util").util.find_spec("jax"), reason="jax not installed")
def test_keras3_jax_records_xla_on_by_default_and_off_under_the_variant():
    """Keras 3's jit_compile='auto' turns XLA on for the JAX backend (keras/src/trainers/trainer.py@v3.15.1:256-275):
    the record states it as in effect, and jit_compile=false as off."""
    import json
    import os
    import subprocess
    import sys

    code = ("import json; from bench.core.families.keras import KerasEpochSettings; "
            "from bench.core.stacks import get_stack; "
            "from bench.models.engines.keras import epochs as keras_epochs; "
            "from tests.helpers.cells import engine_cell; "
            "from tests.models.workloads.test_classic_pipelines import small\n"
            "w, ds = small('mnist_mlp', 32); out = {}\n"
            "for kw in ({}, {'jit_compile': False}):\n"
            "    s = keras_epochs.fit(get_stack('keras3-jax'), w, ds, engine_cell('keras3-jax', w, 1, 16), "
            "KerasEpochSettings(progress='none', **kw)).settings.model_dump(exclude_unset=True)\n"
            "    out[str(kw)] = [s['jit_compile'], s['jit_compile_requested']]\n"
            "print(json.dumps(out))")
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"{}": [True, "keras default"], "{'jit_compile': False}": [False, False]}
