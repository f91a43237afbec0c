"""Step-timed tasks (fit / predict / generate) of the ``paper`` suite on the four Keras stacks.

The Keras 3 benchmark's method (keras-benchmarks v0.0.5): ``fit`` and ``predict`` run one epoch of
``steps + 1`` batches with a callback that overrides the batch-end hooks; ``generate`` and SD's
denoising step are timed as whole calls. Here every clock read follows a device barrier
(``bench.timing.make_barrier``), so each step gets its own time and the first step (build + compile)
is reported apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.engines import StepResult, frameworks
from bench.engines.keras_engine import import_keras, make_timing_callback
from bench.knobs import KerasStepSettings
from bench.stacks import Stack
from bench.timing import EpochTimer, make_barrier, time_calls
from bench.workloads import StepWorkload, check_output


def _set_precision(keras, stack: Stack, precision: str) -> str:
    if stack.keras_major == 2:
        keras.mixed_precision.set_global_policy(precision)
        return keras.mixed_precision.global_policy().name
    keras.config.set_dtype_policy(precision)
    return keras.config.dtype_policy().name


def _optimizer(keras, name: str):
    """Keras' defaults (learning rate 1e-3), as the source compiled with ``optimizer="adam"`` / ``AdamW()``."""
    return {"adam": keras.optimizers.Adam, "adamw": keras.optimizers.AdamW}[name]()


def _repeat(batch, n: int):
    """``n`` copies of one batch as a tf.data pipeline, as the source fed ``fit``/``predict`` (keras-hub
    tasks convert their input to tf.data themselves and reject Python generators). On the JAX and torch
    backends TensorFlow is only the input pipeline, kept off the GPU by the worker
    (``frameworks.hide_gpus_from_tensorflow``)."""
    import tensorflow as tf

    return tf.data.Dataset.from_tensors(batch).repeat(n)


def run(stack: Stack, w: StepWorkload, task: str, cfg: dict[str, Any], batch: int, steps: int, device: str,
        settings: KerasStepSettings, telemetry=None) -> StepResult:
    """Build ``w``'s Keras model for ``task``, time ``steps`` steps after the first, return the record blocks.

    ``settings``: ``bench.knobs.KerasStepSettings``; ``jit_compile`` unset means on, except on Keras' torch
    backend (as the source).

    Raises:
        Unsupported: ``jit_compile=True`` on Keras' torch backend without torch.compile's toolchain
            (``frameworks.torch_compile_blocker``).
        RuntimeError: ``generate`` stopped before the fixed length.
    """
    jit = settings.jit_compile if settings.jit_compile is not None else stack.backend != "torch"
    if stack.backend == "torch" and jit is True:
        frameworks.require_torch_compile(device, "jit_compile=True on Keras' PyTorch backend")
    keras = import_keras(stack)
    effective: dict[str, Any] = {"keras_version": keras.__version__, "keras_backend": keras.backend.backend(),
                                 "jit_compile": jit, "steps": steps}
    effective.update(frameworks.set_tf32(stack.backend, settings.tf32))
    effective["precision"] = _set_precision(keras, stack, w.model.precision)
    keras.utils.set_random_seed(0)
    job = w.model.keras_job(stack, keras, task, cfg, batch, {"jit_compile": jit, "tf32": settings.tf32})

    barrier = make_barrier(stack.backend, device)
    timer = EpochTimer(barrier, telemetry)
    result = None
    try:
        if job.call is not None:
            result = time_calls(lambda: job.call(job.model), steps, timer)
        elif task == "fit":
            job.model.compile(optimizer=_optimizer(keras, job.optimizer), loss=job.loss, jit_compile=jit)
            job.model.fit(_repeat((job.inputs, job.targets), steps + 1), epochs=1,
                          verbose=0, callbacks=[make_timing_callback(keras, timer, split_first=True)])
        else:
            job.model.compile(jit_compile=jit)
            result = job.model.predict(_repeat(job.inputs, steps + 1), verbose=0,
                                       callbacks=[make_timing_callback(keras, timer, split_first=True)])
        barrier()
    finally:
        if telemetry:
            telemetry.stop()
    effective["generated_tokens"] = job.checked_tokens(result)
    trainable = int(sum(np.prod(v.shape) for v in job.model.trainable_weights))
    return {
        "output": check_output(task, result),
        "settings": effective,
        "timer": timer,
        "model": {"params_total": int(job.model.count_params()), "params_trainable": trainable},
        "memory": {"device_peak_bytes": frameworks.device_peak_bytes(stack.backend, device)},
    }

