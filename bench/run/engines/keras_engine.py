"""``model.fit`` on the four Keras stacks, timed by a callback at the cell's ``sync`` cadence.

``sync=step`` follows the reference pattern (keras-benchmarks v0.0.5): a callback that overrides
``on_train_batch_end`` (so Keras hands it concrete logs), plus an explicit backend barrier before
each clock read (``bench.run.engines.frameworks.make_barrier``). ``sync=epoch`` (the default) hooks only the epoch
edges, so Keras' own batch path runs as it does without us.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
from typing import Any

import numpy as np

from bench.core.knobs import KerasFitSettings, augment_in_effect, augmentation_problem
from bench.core.stacks import Stack
from bench.results.schema import EffectiveSettings, Memory, Metrics, Model
from bench.run.datasets import Dataset
from bench.run.engines import EpochResult, Unsupported, frameworks, math_mode, toolchain
from bench.run.engines.frameworks import make_barrier
from bench.run.timing import Cadence, EpochClock, EpochTimer, clock, fit_metrics
from bench.run.workloads import Augmentation, Workload


def source_labels(keras, workload: Workload, ds: Dataset) -> Dataset:
    """``ds`` with its labels in the form the workload's source fed them (``Workload.labels``): ``one_hot`` makes
    them with ``keras.utils.to_categorical(y, num_classes)`` on the host, as the 2017 scripts did before ``fit``
    (examples/mnist_mlp.py@2.0.8:34-35 and the others': ``bench.run.workloads.classic.ONE_HOT_LINES``), as float32
    (2.0.8 fed targets to placeholders of ``K.floatx()``); ``integer`` returns ``ds`` as it is. Every data
    pipeline and the augmentation then read these labels."""
    if workload.labels.form == "integer":
        return ds
    n = int(ds.meta["num_classes"])
    one_hot = [keras.utils.to_categorical(y, n).astype(np.float32) for y in (ds.y_train, ds.y_val)]
    return dataclasses.replace(ds, y_train=one_hot[0], y_val=one_hot[1])

#: The tuning suite's tf.data shuffle buffer, 20,000 examples, capped at the training set's size: assumed (the
#: study's table, bench/core/reference/mnist_cnn_tuning_4060ti.csv, says only "shuffling on").
TF_DATA_SHUFFLE_BUFFER = 20_000


def import_keras(stack: Stack):
    """tf-keras for the Keras 2 stack, Keras 3 otherwise (its backend comes from KERAS_BACKEND)."""
    if stack.keras_major == 2:
        import tf_keras as keras
    else:
        import keras
    return keras


def set_random_seed(keras, seed: int = 0) -> bool:
    """``keras.utils.set_random_seed(seed)`` (Python, NumPy, the backend, Keras' global seed generator), except
    that on Keras 3's JAX and PyTorch backends it does not import TensorFlow only to seed it. Keras seeds TF
    whenever TF is installed, for tf.data pipelines, and importing it costs ~3 s of every cell; the seed is
    instead set when something imports TF later (a ``tf.data`` pipeline), by a post-import hook, so a
    pipeline shuffles as it would have.

    Returns whether TensorFlow was seeded now (False: not loaded; seeded when it is)."""
    import sys

    if keras.__version__.startswith("2.") or keras.backend.backend() == "tensorflow" or "tensorflow" in sys.modules:
        keras.utils.set_random_seed(seed)
        return True
    import wrapt
    from keras.src.utils import module_utils

    lazy_tf, looked = module_utils.tensorflow, module_utils.tensorflow._available
    lazy_tf._available = False  # Keras' own switch: "TensorFlow is not installed" for this one call
    try:
        keras.utils.set_random_seed(seed)
    finally:
        lazy_tf._available = looked  # a later tf.data pipeline finds TensorFlow as usual
    wrapt.register_post_import_hook(lambda tf: tf.random.set_seed(seed), "tensorflow")
    return False


def make_timing_callback(keras, timer: EpochTimer, split_first: bool = False, epochs: EpochClock | None = None):
    """The timing callback for ``timer``'s cadence.

    ``epochs`` (an ``EpochClock``, or None): also timed per epoch as Keras 2.0.8's progress bar did, begun at
    ``on_epoch_begin`` before the timer's own clock, ended at ``on_epoch_end``, which Keras 3 and tf.keras call
    after the epoch's validation (keras/src/backend/jax/trainer.py@v3.15.1:442, 511, 526; the same order on the
    other backends), as 2.0.8 did.

    ``sync=epoch``: a callback with epoch hooks only. It overrides no batch hook, so Keras keeps its own
    batch path: Keras 3 dispatches batch-end work to a thread pool (``CallbackList._async_train``) and
    tf.keras skips the batch hooks; neither waits for the device between steps. It passes the epoch's
    step count (``params['steps']``) to ``end_epoch``.
    Otherwise it also overrides the batch hooks, so Keras hands it concrete logs after every step (a
    host-device synchronisation of its own on every step, ``every:N`` included). Keras calls them once
    per execution: begin with its first step index, end with its last (which can overshoot the epoch's
    last step; Keras then runs fewer steps). ``predict`` is timed the same way, as one epoch.
    ``split_first``: the first step (build + compile) becomes an epoch of its own, so the timer's and
    telemetry's steady window is steps 2..N (the step-timed suite, ``step`` cadence only).
    """

    class EpochEdges(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epochs is not None:
                epochs.begin()
            timer.begin_epoch()

        def on_test_begin(self, logs=None):  # fit's validation: after the epoch's last training step
            self.close()

        def on_epoch_end(self, epoch, logs=None):
            self.close()
            if epochs is not None:
                epochs.end()

        def close(self):
            timer.end_epoch((self.params or {}).get("steps"))

    class StepTimer(EpochEdges):
        first = 0

        def close(self):
            timer.end_epoch()

        def on_predict_begin(self, logs=None):
            timer.begin_epoch()

        def on_predict_end(self, logs=None):  # before predict joins the batches' outputs on the host
            self.close()

        def on_train_batch_begin(self, batch, logs=None):
            self.first = batch

        def on_train_batch_end(self, batch, logs=None):
            total = (self.params or {}).get("steps") or batch + 1
            timer.end_step(min(batch, total - 1) - self.first + 1)
            if split_first and len(timer.intervals) == 1:
                timer.begin_epoch()

        on_predict_batch_begin = on_train_batch_begin
        on_predict_batch_end = on_train_batch_end

    if split_first and timer.cadence.every != 1:
        raise ValueError("split_first needs the step cadence")
    return EpochEdges() if timer.cadence.every is None else StepTimer()


def make_optimizer(keras, workload: Workload, jit_compile: bool | str | None = None):
    """The Keras optimizer of ``workload.optimizer`` with every hyper-parameter explicit (Keras 3 and tf.keras
    defaults differ from the Keras 2.0.8 scripts': ``bench.run.workloads.classic.KERAS208``).

    ``jit_compile``: the cell's knob. tf-keras optimizers take their own ``jit_compile``, True by default, which
    compiles each variable's update step with XLA whenever a GPU is listed
    (tf_keras/src/optimizers/optimizer.py@2.21.0:49, 59-67, 211), whatever ``Model.compile`` was given; so
    ``jit_compile=False`` turns it off there too (Keras 2.0.8 had no XLA). Keras 3 optimizers have no such
    argument: the trainer's ``jit_compile`` covers their update.

    A ``decay`` is Keras 2.0.8's per-update ``lr / (1 + decay * t)`` (keras/optimizers.py@2.0.8:232), which is
    ``keras.optimizers.schedules.InverseTimeDecay(lr, decay_steps=1, decay_rate=decay)``: Keras calls a schedule
    with the updates done so far, 0 first, as 2.0.8 read its ``iterations``.
    Update rules: Adadelta's and Adam's are 2.0.8's (keras/optimizers.py@2.0.8:362, 424-434); RMSprop's puts
    epsilon inside the square root (keras/src/optimizers/rmsprop.py@v3.15.1:143-145; tf-keras 2.21.0
    tf_keras/src/optimizers/rmsprop.py:191-192), where 2.0.8 added it to the root (keras/optimizers.py@2.0.8:239):
    a documented difference.

    Raises:
        ValueError: an optimizer this engine does not know.
    """
    spec = workload.optimizer
    lr = spec.learning_rate
    if spec.decay:
        lr = keras.optimizers.schedules.InverseTimeDecay(spec.learning_rate, decay_steps=1, decay_rate=spec.decay)
    classes = {"rmsprop": "RMSprop", "adadelta": "Adadelta", "adam": "Adam"}
    if spec.name not in classes:
        raise ValueError(f"unknown optimizer {spec.name!r}")
    cls = getattr(keras.optimizers, classes[spec.name])
    if spec.name == "adam":
        kw: dict[str, Any] = {"beta_1": spec.beta_1, "beta_2": spec.beta_2, "epsilon": spec.epsilon}
    else:
        kw = {"rho": spec.rho, "epsilon": spec.epsilon}
    if jit_compile is False and "jit_compile" in inspect.signature(cls).parameters:
        kw["jit_compile"] = False
    return cls(learning_rate=lr, **kw)


def optimizer_record(optimizer) -> dict[str, Any]:
    """What the Keras optimizer was built with, read back from it (``settings.optimizer``): its class, initial
    learning rate, the hyper-parameters of its rule and the learning-rate schedule (None: constant)."""
    cfg = optimizer.get_config()
    out: dict[str, Any] = {"name": type(optimizer).__name__}
    lr = cfg["learning_rate"]
    if isinstance(lr, dict):  # a serialised schedule
        sched = lr.get("config", {})
        out["learning_rate"] = float(sched["initial_learning_rate"])
        out["lr_schedule"] = {"class": lr.get("class_name"),
                              **{k: sched[k] for k in ("decay_steps", "decay_rate", "staircase") if k in sched}}
    else:
        out["learning_rate"] = float(lr)
        out["lr_schedule"] = None
    for key in ("rho", "momentum", "centered", "epsilon", "beta_1", "beta_2", "amsgrad"):
        if key in cfg:
            out[key] = cfg[key] if isinstance(cfg[key], bool) else float(cfg[key])
    if hasattr(optimizer, "jit_compile"):  # tf-keras: as it took effect (False without a GPU: optimizer.py:59-67)
        out["jit_compile"] = bool(optimizer.jit_compile)
    return out


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
    """Examples a pipeline's shuffle draws from: the tuning suite's tf.data buffer (``TF_DATA_SHUFFLE_BUFFER``,
    capped at ``n_train``), else ``n_train`` (``fit(shuffle=True)`` permutes the whole set each epoch)."""
    return min(TF_DATA_SHUFFLE_BUFFER, n_train) if pipeline in ("tf_data_numpy", "tf_data_tensors") else n_train


def train_data(keras, pipeline: str, ds: Dataset, batch_size: int) -> dict[str, Any]:
    """``fit`` arguments for the data pipeline (where ``fit`` then makes the batches: ``placement``).

    tf.data pipelines shuffle each epoch from a buffer of ``shuffle_buffer`` examples, batch with parallel
    calls and prefetch, both AUTOTUNE (the study's table gives ``autotune`` for its tf.data rows; which calls,
    assumed); ``tensors_fit`` hands ``fit`` backend tensors (on the device where the backend puts them), which
    ``fit`` batches its own way per backend (``PLACEMENT``).

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
        auto = tf.data.AUTOTUNE
        data = (tf.data.Dataset.from_tensor_slices((x, y))
                .shuffle(shuffle_buffer(pipeline, ds.n_train), reshuffle_each_iteration=True)
                .batch(batch_size, num_parallel_calls=auto).prefetch(auto))
        return {"x": data}
    if pipeline == "tensors_fit":
        conv = keras.ops.convert_to_tensor if hasattr(keras, "ops") else _tf_constant
        tensors = [conv(x) for x in ds.x_train]
        return {"x": tensors[0] if len(tensors) == 1 else tensors, "y": conv(ds.y_train), "batch_size": batch_size,
                "shuffle": True}
    raise ValueError(f"unknown data_pipeline {pipeline!r}")


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


@contextlib.contextmanager
def progress_bar_discarded(verbose: int):
    """With ``verbose`` 1, ``sys.stdout`` goes to ``os.devnull`` for the block: Keras' progress bar (what
    ``fit(verbose=1)`` prints, as the 2017 scripts ran: examples/mnist_mlp.py@2.0.8:53) is written, and
    discarded, not the cell's log. Keras 3 and tf.keras print it through ``sys.stdout``
    (keras/src/utils/io_utils.py@v3.15.1 ``print_msg``). With 0 nothing is redirected."""
    if not verbose:
        yield
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def fit(stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch_size: int,
        settings: KerasFitSettings, telemetry=None) -> EpochResult:
    """Train ``workload`` on ``ds`` for ``epochs`` and return the record blocks.

    ``settings``: ``bench.core.knobs.KerasFitSettings`` (defaults, allowed values and meaning there). The workload's
    augmentation, where its source had one and ``augment`` is not false, replaces the data pipeline
    (``augmented_train_data``). ``metrics.fit_s_per_epoch`` is the 2017 comparison's metric: each epoch timed as
    Keras 2.0.8's progress bar did, from ``on_epoch_begin`` to after its validation (``bench.run.timing.EpochClock``;
    the barriers are ours), averaged; ``metrics.fit_call_s`` is the whole ``fit`` call (``fit_metrics``).

    Raises:
        Unsupported: ``augment`` asked for where the source has none, or with another data pipeline.
    """
    reason = augmentation_problem(settings, workload.name, workload.augmentation is not None)
    if reason:
        raise Unsupported(reason)
    if stack.backend == "torch" and settings.jit_compile is True:
        toolchain.require_torch_compile(device, "jit_compile=True on Keras' PyTorch backend")
    keras = import_keras(stack)
    effective = EffectiveSettings(keras_version=keras.__version__)
    effective.update(math_mode.set_tf32(stack.backend, settings.tf32))
    precision = settings.precision
    keras.mixed_precision.set_global_policy(precision)
    set_random_seed(keras, 0)

    model = workload.build_keras(keras, ds.meta, **{k: getattr(settings, k) for k in workload.keras_knobs})
    compile_kw: dict[str, Any] = {"steps_per_execution": settings.steps_per_execution}
    if settings.jit_compile is not None:  # else Keras' own (Keras 2: step off, optimizer's XLA on; Keras 3: 'auto')
        compile_kw["jit_compile"] = settings.jit_compile
    optimizer = make_optimizer(keras, workload, settings.jit_compile)
    labels = workload.labels
    model.compile(optimizer=optimizer, loss=labels.loss, metrics=list(labels.metrics), **compile_kw)
    jit = getattr(model, "jit_compile", getattr(model, "_jit_compile", None))
    effective.update({
        "precision": keras.mixed_precision.global_policy().name,
        "jit_compile_requested": "keras default" if settings.jit_compile is None else settings.jit_compile,
        "jit_compile": jit,
        "steps_per_execution": compile_kw["steps_per_execution"],
        "keras_backend": keras.backend.backend(),
        "data_pipeline": settings.data_pipeline,
    })
    effective.loss = labels.loss
    effective.labels = {"form": labels.form, "metrics": list(labels.metrics), "source": labels.source}
    effective.extra["verbose"] = settings.verbose
    ds = source_labels(keras, workload, ds)
    effective.optimizer = optimizer_record(optimizer)
    augmenting = augment_in_effect(settings, workload.augmentation is not None)
    effective.extra["augment"] = augmenting
    trained = ds.n_train
    aug = workload.augmentation
    if augmenting and aug is not None:  # augment_in_effect: only a workload with an augmentation augments
        fit_kw, effective.augmentation = augmented_train_data(keras, aug, ds, batch_size)
        effective.update({"data_pipeline": "host_augmentation", "train_data_placement": AUGMENTED_PLACEMENT,
                          "shuffle_buffer": ds.n_train})
        trained = ds.n_train // batch_size * batch_size if aug.drop_remainder else ds.n_train
    else:
        fit_kw = train_data(keras, settings.data_pipeline, ds, batch_size)
        effective.train_data_placement = placement(settings.data_pipeline, stack.keras_major or 0, stack.backend)
        effective.shuffle_buffer = shuffle_buffer(settings.data_pipeline, ds.n_train)

    barrier = make_barrier(stack.backend, device)
    timer = EpochTimer(barrier, telemetry, Cadence.parse(settings.sync))
    epoch_clock = EpochClock(barrier)
    try:
        barrier()
        start = clock()
        with progress_bar_discarded(settings.verbose):
            history = model.fit(**fit_kw, epochs=epochs, validation_data=(model_inputs(ds.x_val), ds.y_val),
                                validation_batch_size=batch_size, verbose=settings.verbose,
                                callbacks=[make_timing_callback(keras, timer, epochs=epoch_clock)])
        barrier()
        fit_call_s = clock() - start
    finally:
        if telemetry:
            telemetry.stop()
    if workload.keras_model_facts:  # measured on the trained model, outside the timed window
        effective.update(workload.keras_model_facts(keras, model))
    trainable = int(sum(np.prod(w.shape) for w in model.trainable_weights))
    metrics = Metrics(**timer.summary(batch_size, trained))
    metrics.update(fit_metrics(epoch_clock.epoch_s, fit_call_s))
    return EpochResult(
        settings=effective,
        metrics=metrics,
        history={k: [float(v) for v in vals] for k, vals in history.history.items()},
        model=Model(params_total=int(model.count_params()), params_trainable=trainable),
        memory=Memory(device_peak_bytes=frameworks.device_peak_bytes(stack.backend, device)),
    )


def param_count(stack: Stack, workload: Workload, meta: dict[str, Any]) -> int:
    """Parameter count of the Keras model of ``workload`` (used by the cross-stack tests)."""
    keras = import_keras(stack)
    return int(workload.build_keras(keras, meta).count_params())
