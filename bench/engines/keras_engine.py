"""``model.fit`` on the four Keras stacks, timed with a device barrier at every step edge.

Timing follows the reference pattern (keras-benchmarks v0.0.5): a callback that overrides
``on_train_batch_end`` (so Keras hands it concrete logs), plus an explicit backend barrier before
each clock read (``bench.timing.make_barrier``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.datasets import Dataset
from bench.engines import frameworks
from bench.stacks import Stack
from bench.timing import EpochTimer, make_barrier
from bench.workloads import Workload


def import_keras(stack: Stack):
    """tf-keras for the Keras 2 stack, Keras 3 otherwise (its backend comes from KERAS_BACKEND)."""
    if stack.keras_major == 2:
        import tf_keras as keras
    else:
        import keras
    return keras


def make_timing_callback(keras, timer: EpochTimer):
    class StepTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            timer.begin_epoch()

        def on_train_batch_end(self, batch, logs=None):
            timer.end_step()

    return StepTimer()


def make_optimizer(keras, workload: Workload):
    if workload.optimizer == "rmsprop":
        return keras.optimizers.RMSprop(learning_rate=workload.learning_rate)
    if workload.optimizer == "adam":
        return keras.optimizers.Adam(learning_rate=workload.learning_rate)
    raise ValueError(f"unknown optimizer {workload.optimizer!r}")


def _inputs(xs: tuple[np.ndarray, ...]):
    return xs[0] if len(xs) == 1 else list(xs)


def fit(stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch_size: int,
        settings: dict[str, Any]) -> dict[str, Any]:
    """Train ``workload`` on ``ds`` for ``epochs`` and return the record blocks.

    Settings honoured: ``tf32`` (bool, default False), ``jit_compile`` (Keras' default when absent),
    ``steps_per_execution`` (default 1), ``precision`` (``float32`` or a Keras mixed policy name).
    """
    keras = import_keras(stack)
    effective: dict[str, Any] = {"keras_version": keras.__version__}
    effective.update(frameworks.set_tf32(stack.backend, bool(settings.get("tf32", False))))
    precision = settings.get("precision", "float32")
    keras.mixed_precision.set_global_policy(precision)
    keras.utils.set_random_seed(0)

    model = workload.build_keras(keras, ds.meta)
    compile_kw: dict[str, Any] = {"steps_per_execution": int(settings.get("steps_per_execution", 1))}
    if "jit_compile" in settings:
        compile_kw["jit_compile"] = settings["jit_compile"]
    model.compile(optimizer=make_optimizer(keras, workload), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], **compile_kw)
    jit = getattr(model, "jit_compile", getattr(model, "_jit_compile", None))
    effective.update({
        "precision": keras.mixed_precision.global_policy().name,
        "jit_compile_requested": settings.get("jit_compile", "keras default"),
        "jit_compile": jit,
        "steps_per_execution": compile_kw["steps_per_execution"],
        "keras_backend": keras.backend.backend(),
        "data_pipeline": "numpy_fit",
    })

    timer = EpochTimer(make_barrier(stack.backend, device))
    history = model.fit(_inputs(ds.x_train), ds.y_train, batch_size=batch_size, epochs=epochs,
                        shuffle=True, validation_data=(_inputs(ds.x_val), ds.y_val), verbose=0,
                        callbacks=[make_timing_callback(keras, timer)])
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
