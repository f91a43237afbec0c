"""``model.fit`` on the four Keras stacks, timed by a callback at the cell's ``sync`` cadence.

``sync=step`` follows the reference pattern (keras-benchmarks v0.0.5): a callback that overrides
``on_train_batch_end`` (so Keras hands it concrete logs), plus an explicit backend barrier before
each clock read (``bench.timing.make_barrier``). ``sync=epoch`` (the default) hooks only the epoch
edges, so Keras' own batch path runs as it does without us.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.datasets import Dataset
from bench.engines import EpochResult, frameworks
from bench.knobs import KerasFitSettings
from bench.stacks import Stack
from bench.timing import Cadence, EpochTimer, make_barrier
from bench.workloads import Workload


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


def make_timing_callback(keras, timer: EpochTimer, split_first: bool = False):
    """The timing callback for ``timer``'s cadence.

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
            timer.begin_epoch()

        def on_test_begin(self, logs=None):  # fit's validation: after the epoch's last training step
            self.close()

        def on_epoch_end(self, epoch, logs=None):
            self.close()

        def close(self):
            timer.end_epoch((self.params or {}).get("steps"))

    class StepTimer(EpochEdges):
        first = 0

        def close(self):
            timer.end_epoch()

        def on_predict_begin(self, logs=None):
            timer.begin_epoch()

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


def make_optimizer(keras, workload: Workload):
    if workload.optimizer == "rmsprop":
        return keras.optimizers.RMSprop(learning_rate=workload.learning_rate)
    if workload.optimizer == "adam":
        return keras.optimizers.Adam(learning_rate=workload.learning_rate)
    raise ValueError(f"unknown optimizer {workload.optimizer!r}")


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


def train_data(keras, pipeline: str, ds: Dataset, batch_size: int) -> dict[str, Any]:
    """``fit`` arguments for the data pipeline (where ``fit`` then makes the batches: ``placement``).

    tf.data pipelines shuffle each epoch, batch with parallel calls and prefetch, both AUTOTUNE (the
    tuning study's setup); ``tensors_fit`` hands ``fit`` backend tensors (on the device where the backend
    puts them), which ``fit`` batches its own way per backend (``PLACEMENT``).

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
        data = (tf.data.Dataset.from_tensor_slices((x, y)).shuffle(ds.n_train, reshuffle_each_iteration=True)
                .batch(batch_size, num_parallel_calls=auto).prefetch(auto))
        return {"x": data}
    if pipeline == "tensors_fit":
        conv = keras.ops.convert_to_tensor if hasattr(keras, "ops") else _tf_constant
        xs = [conv(x) for x in ds.x_train]
        return {"x": xs[0] if len(xs) == 1 else xs, "y": conv(ds.y_train), "batch_size": batch_size,
                "shuffle": True}
    raise ValueError(f"unknown data_pipeline {pipeline!r}")


def _tf_constant(x):
    import tensorflow as tf

    return tf.constant(x)


def fit(stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch_size: int,
        settings: KerasFitSettings, telemetry=None) -> EpochResult:
    """Train ``workload`` on ``ds`` for ``epochs`` and return the record blocks.

    ``settings``: ``bench.knobs.KerasFitSettings`` (defaults, allowed values and meaning there).
    """
    if stack.backend == "torch" and settings.jit_compile is True:
        frameworks.require_torch_compile(device, "jit_compile=True on Keras' PyTorch backend")
    keras = import_keras(stack)
    effective: dict[str, Any] = {"keras_version": keras.__version__}
    effective.update(frameworks.set_tf32(stack.backend, settings.tf32))
    precision = settings.precision
    keras.mixed_precision.set_global_policy(precision)
    set_random_seed(keras, 0)

    model = workload.build_keras(keras, ds.meta)
    compile_kw: dict[str, Any] = {"steps_per_execution": settings.steps_per_execution}
    if settings.jit_compile is not None:  # else Keras' own default (Keras 2: off; Keras 3: 'auto')
        compile_kw["jit_compile"] = settings.jit_compile
    model.compile(optimizer=make_optimizer(keras, workload), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], **compile_kw)
    jit = getattr(model, "jit_compile", getattr(model, "_jit_compile", None))
    effective.update({
        "precision": keras.mixed_precision.global_policy().name,
        "jit_compile_requested": "keras default" if settings.jit_compile is None else settings.jit_compile,
        "jit_compile": jit,
        "steps_per_execution": compile_kw["steps_per_execution"],
        "keras_backend": keras.backend.backend(),
        "data_pipeline": settings.data_pipeline,
    })
    fit_kw = train_data(keras, effective["data_pipeline"], ds, batch_size)
    effective["train_data_placement"] = placement(settings.data_pipeline, stack.keras_major, stack.backend)

    barrier = make_barrier(stack.backend, device)
    timer = EpochTimer(barrier, telemetry, Cadence.parse(settings.sync))
    try:
        history = model.fit(**fit_kw, epochs=epochs, validation_data=(model_inputs(ds.x_val), ds.y_val),
                            verbose=0, callbacks=[make_timing_callback(keras, timer)])
        barrier()
    finally:
        if telemetry:
            telemetry.stop()
    trainable = int(sum(np.prod(w.shape) for w in model.trainable_weights))
    return {
        "settings": effective,
        "metrics": timer.summary(batch_size, ds.n_train),
        "history": {k: [float(v) for v in vals] for k, vals in history.history.items()},
        "model": {"params_total": int(model.count_params()), "params_trainable": trainable},
        "memory": {"device_peak_bytes": frameworks.device_peak_bytes(stack.backend, device)},
    }


def param_count(stack: Stack, workload: Workload, meta: dict[str, Any]) -> int:
    """Parameter count of the Keras model of ``workload`` (used by the cross-stack tests)."""
    keras = import_keras(stack)
    return int(workload.build_keras(keras, meta).count_params())
