"""What the Keras epoch engine hands ``fit``: the labels in the source's form, the data pipelines (tf.data, NumPy
arrays, backend tensors) and where each makes its batches, and the source's real-time augmentation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from bench.models.datasets import Dataset
from bench.models.engines import tfdata
from bench.models.workloads import Workload
from bench.models.workloads.training import Augmentation


def source_labels(keras, workload: Workload, ds: Dataset) -> Dataset:
    """``ds`` with its labels in the form the workload's source fed them (``Workload.labels``): ``one_hot`` makes
    them with ``keras.utils.to_categorical(y, num_classes)`` on the host, as the 2017 scripts did before ``fit``
    (examples/mnist_mlp.py@2.0.8:34-35 and the others': each folder's ``spec.py``, ``labels_2017``), as float32
    (2.0.8 fed targets to placeholders of ``K.floatx()``); ``integer`` returns ``ds`` as it is. Every data
    pipeline and the augmentation then read these labels."""
    if workload.labels.form == "integer":
        return ds
    n = int(ds.meta["num_classes"])
    one_hot = [keras.utils.to_categorical(y, n).astype(np.float32) for y in (ds.y_train, ds.y_val)]
    return dataclasses.replace(ds, y_train=one_hot[0], y_val=one_hot[1])


def model_inputs(xs: tuple[np.ndarray, ...]):
    """What ``fit``/``predict`` take for a model's inputs: the array itself for one input, a list for several."""
    return xs[0] if len(xs) == 1 else list(xs)


HOST_TF_DATA = "host (tf.data)"
HOST_NUMPY = "host (NumPy)"
DEVICE_TORCH = "device (torch tensors)"

#: Where ``fit`` makes each training batch, per (Keras major, backend) and data pipeline
#: (``settings.train_data_placement``): ``host (tf.data)``: a tf.data pipeline slices, shuffles and batches on
#: the host (tf.data runs on the CPU whatever its source, ``tf.constant``s on the GPU included) and each batch is
#: copied to the device; ``host (NumPy)``: NumPy arrays are sliced on the host and each batch copied;
#: ``device (torch tensors)``: the batch is gathered from the torch tensors on their own device. Sources, keras
#: 3.15.1: trainers/data_adapters/array_data_adapter.py (``get_tf_dataset``: tf.data; ``get_jax_iterator``:
#: NumPy slices, put on the device one batch ahead by backend/jax/trainer.py ``JAXEpochIterator``;
#: ``get_torch_dataloader``: slices in the inputs' own type), array_slicing.py ``convert_to_sliceable`` (it
#: turns a JAX array into NumPy first, so ``tensors_fit`` on JAX copies its device arrays to the host),
#: backend/{tensorflow,jax,torch}/trainer.py (which method each backend's epoch iterator calls); tf-keras 2.21.0:
#: src/engine/data_adapter.py ``TensorLikeDataAdapter`` (NumPy and tensors alike: a tf.data pipeline).
#: ``tf_data_*`` hand ``fit`` a tf.data pipeline on every backend.
_TF_DATA = {"tf_data_numpy": HOST_TF_DATA, "tf_data_tensors": HOST_TF_DATA}
PLACEMENT: dict[tuple[int, str], dict[str, str]] = {
    (2, "tensorflow"): {"numpy_fit": HOST_TF_DATA, "tensors_fit": HOST_TF_DATA, **_TF_DATA},
    (3, "tensorflow"): {"numpy_fit": HOST_TF_DATA, "tensors_fit": HOST_TF_DATA, **_TF_DATA},
    (3, "jax"): {"numpy_fit": HOST_NUMPY, "tensors_fit": HOST_NUMPY, **_TF_DATA},
    (3, "torch"): {"numpy_fit": HOST_NUMPY, "tensors_fit": DEVICE_TORCH, **_TF_DATA},
}


def placement(pipeline: str, keras_major: int, backend: str) -> str:
    """Where ``fit`` makes the training batches of ``pipeline`` under Keras ``keras_major`` on ``backend``
    (``PLACEMENT``).

    Raises:
        ValueError: a pipeline, or a Keras major and backend pair, that ``PLACEMENT`` does not know.
    """
    try:
        return PLACEMENT[(keras_major, backend)][pipeline]
    except KeyError:
        raise ValueError(f"no train_data_placement for data_pipeline {pipeline!r} on Keras {keras_major} with "
                         f"backend {backend!r}") from None


def shuffle_buffer(pipeline: str, n_train: int) -> int:
    """Examples a pipeline's shuffle draws from: the tuning study's tf.data buffer for the ``tf_data_*`` pipelines
    (``bench.models.engines.tfdata.shuffle_buffer``: 20,000, capped at ``n_train``), else ``n_train``
    (``fit(shuffle=True)`` permutes the whole set each epoch)."""
    return tfdata.shuffle_buffer(n_train) if pipeline in ("tf_data_numpy", "tf_data_tensors") else n_train


def train_data(keras, pipeline: str, ds: Dataset, batch_size: int) -> dict[str, Any]:
    """``fit`` arguments for the data pipeline (where ``fit`` then makes the batches: ``placement``).

    tf.data pipelines are the tuning study's (``bench.models.engines.tfdata.study_pipeline``: shuffled each epoch from
    20,000 examples, batched with AUTOTUNE parallel calls, prefetched with an AUTOTUNE buffer, as its post states:
    ``bench.core.reference.tuning_study``), from the arrays or from ``tf.constant`` tensors; ``tensors_fit`` hands
    ``fit`` backend tensors (on the device where the backend puts them), which ``fit`` batches its own way per
    backend (``PLACEMENT``).

    Raises:
        ValueError: an unknown ``pipeline``.
    """
    if pipeline == "numpy_fit":
        return {"x": model_inputs(ds.x_train), "y": ds.y_train, "batch_size": batch_size, "shuffle": True}
    if pipeline in ("tf_data_numpy", "tf_data_tensors"):
        import tensorflow as tf

        xs = tuple(ds.x_train) if pipeline == "tf_data_numpy" else tuple(tf.constant(x) for x in ds.x_train)
        y = ds.y_train if pipeline == "tf_data_numpy" else tf.constant(ds.y_train)
        x = xs[0] if len(xs) == 1 else xs
        return {"x": tfdata.study_pipeline(tf, (x, y), ds.n_train, batch_size)}
    if pipeline == "tensors_fit":
        conv = keras.ops.convert_to_tensor if hasattr(keras, "ops") else _tf_constant
        tensors = [conv(x) for x in ds.x_train]
        return {"x": tensors[0] if len(tensors) == 1 else tensors, "y": conv(ds.y_train), "batch_size": batch_size,
                "shuffle": True}
    raise ValueError(f"unknown data_pipeline {pipeline!r}")


def with_batches(keras, fit_kw: dict[str, Any], n: int, batch_size: int | None = None) -> dict[str, Any]:
    """``fit_kw`` (``train_data``'s or ``augmented_train_data``'s ``fit`` arguments) holding at least ``n`` batches,
    for a call of ``steps_per_epoch=n`` (the profile's: ``bench.instruments.profile.rerun.keras_fit``) where an epoch
    holds fewer: Keras 3 and tf-keras end such a call when the data runs out ("Your input ran out of data",
    keras/src/trainers/epoch_iterator.py@v3.15.1 ``_enumerate_iterator``), before the profile window closes.
    A tf.data pipeline is repeated (``Dataset.repeat()``: ``fit`` then stops at ``steps_per_epoch``); where its
    epochs end in a smaller batch than ``batch_size`` and hold a full one, the smaller one is left out first
    (``Dataset.filter``), so that an epoch's edge does not put it among the profiled steps. Arrays and tensors
    (``batch_size`` in ``fit_kw``) are concatenated with themselves as often as ``n`` batches need: all ``n`` are
    full. The pipeline, its placement and the batch stay the cell's."""
    x = fit_kw["x"]
    if "batch_size" not in fit_kw:  # a tf.data pipeline makes its own batches
        return {**fit_kw, "x": full_batches(x, batch_size).repeat()}
    first = x[0] if isinstance(x, list) else x
    examples = int(first.shape[0])
    copies = -(-n * int(fit_kw["batch_size"]) // examples)
    if copies <= 1:
        return fit_kw

    def tiled(a):
        if isinstance(a, np.ndarray):
            return np.concatenate([a] * copies)
        return keras.ops.concatenate([a] * copies) if hasattr(keras, "ops") else _tf_concat([a] * copies)

    return {**fit_kw, "x": [tiled(a) for a in x] if isinstance(x, list) else tiled(x), "y": tiled(fit_kw["y"])}


def full_batches(ds: Any, batch_size: int | None) -> Any:
    """The tf.data pipeline ``ds`` of batches without those smaller than ``batch_size`` (``Dataset.filter``), where
    its epoch holds two batches or more (``Dataset.cardinality``: the first is then full); else ``ds`` itself: no
    batch size, an epoch of one batch (the cell's steps were all that batch), or an epoch TensorFlow cannot count."""
    if not batch_size or int(ds.cardinality()) < 2:  # -2 unknown, -1 infinite, 0 or 1 batch
        return ds
    import tensorflow as tf

    def full(*batch: Any) -> Any:
        return tf.equal(tf.shape(tf.nest.flatten(batch)[0])[0], batch_size)

    return ds.filter(full)


def _tf_concat(parts):
    import tensorflow as tf

    return tf.concat(parts, axis=0)


def _tf_constant(x):
    import tensorflow as tf

    return tf.constant(x)


def augment_layers(keras, aug: Augmentation) -> list[Any]:
    """The Keras preprocessing layers that do ``aug`` to one (H, W, C) image: ``RandomTranslation`` (shifts drawn
    uniformly from [-range, range] x size, as image.py@2.0.8:555-561, resampled nearest with edge fill, as its
    ``order=0``, ``fill_mode='nearest'``), then ``RandomFlip('horizontal')`` (probability 0.5, 2.0.8's order)."""
    L = keras.layers
    layers = [L.RandomTranslation(aug.height_shift_range, aug.width_shift_range, fill_mode=aug.fill_mode,
                                  interpolation=aug.interpolation)]
    if aug.horizontal_flip:
        layers.append(L.RandomFlip("horizontal"))
    return layers


#: Where augmented batches come from (``settings.train_data_placement``).
AUGMENTED_PLACEMENT = "host (tf.data: per-image augmentation by one background thread, batches queued)"


def augmented_train_data(keras, aug: Augmentation, ds: Dataset, batch_size: int) -> tuple[dict[str, Any], dict]:
    """``fit`` arguments for training on augmented images, as Keras 2.0.8's ``fit_generator(datagen.flow(...))``
    ran them (examples/cifar10_cnn.py@2.0.8:104-107): a full shuffle each epoch, each image augmented on its own,
    on the host, by one background producer that queues ``aug.max_queue_size`` batches while the device trains
    (keras/engine/training.py@2.0.8:1839-1841: ``max_queue_size=10, workers=1``), ``n // batch`` steps an epoch.

    Here: tf.data (on every Keras stack; TensorFlow stays off the GPU on the others), the layers of
    ``augment_layers`` mapped per example without parallel calls, in a private pool of ``aug.workers`` thread(s),
    then ``batch`` and ``prefetch(aug.max_queue_size)``.

    Returns:
        the ``fit`` arguments, and the ``settings.augmentation`` block (the parameters and how they ran).

    Raises:
        ValueError: the workload has more than one input, or fewer training examples than a batch.
    """
    import tensorflow as tf

    aug.check(len(ds.x_train), ds.n_train, batch_size)
    layers = augment_layers(keras, aug)

    def augment(x, y):
        for layer in layers:
            x = layer(x, training=True)
        return x, y

    options = tf.data.Options()
    options.threading.private_threadpool_size = aug.workers
    options.threading.max_intra_op_parallelism = 1
    data = (tf.data.Dataset.from_tensor_slices((ds.x_train[0], ds.y_train))
            .shuffle(ds.n_train, reshuffle_each_iteration=True)
            .map(augment)  # no num_parallel_calls: one image after the other, as the source's generator
            .batch(batch_size, drop_remainder=aug.drop_remainder)
            .prefetch(aug.max_queue_size)
            .with_options(options))
    how = {**aug.record(), "where": AUGMENTED_PLACEMENT, "shuffle_buffer": ds.n_train,
           "implementation": " + ".join(f"{type(layer).__name__}({_layer_args(layer)})" for layer in layers)
           + " in tf.data map, per image"}
    return {"x": data}, how


def _layer_args(layer) -> str:
    cfg = layer.get_config()
    keys = ("height_factor", "width_factor", "fill_mode", "interpolation", "mode")
    return ", ".join(f"{k}={cfg[k]!r}" for k in keys if k in cfg)

