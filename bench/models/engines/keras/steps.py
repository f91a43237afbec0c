"""Step-timed tasks (fit / predict / generate) of the ``paper`` suite on the four Keras stacks.

The Keras 3 benchmark's method (keras-benchmarks v0.0.5): ``fit`` and ``predict`` run one epoch of
``steps + 1`` batches with a callback that overrides the batch-end hooks; ``generate`` and SD's
denoising step are timed as whole calls. Here every clock read follows a device barrier
(``bench.models.engines.frameworks.make_barrier``), so each step gets its own time and the first step (build + compile)
is reported apart. XLA is requested cell by cell as the source requested it
(``bench.core.reference.keras_benchmarks.SOURCE_JIT``), unless a ``jit_compile`` knob names a variant; the record
carries the request and what was in effect after the run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.core.families.keras import KerasStepSettings
from bench.core.reference import keras_benchmarks as source
from bench.core.stacks import Stack
from bench.instruments.profile import rerun
from bench.instruments.timing import EpochTimer, time_calls
from bench.models.engines import StepResult, frameworks, math_mode, output_block, toolchain
from bench.models.engines.frameworks import make_barrier
from bench.models.engines.keras.epochs import optimizer_jit_kwargs, optimizer_record, progress_bar_discarded
from bench.models.engines.keras.runtime import import_keras, make_timing_callback
from bench.models.workloads import StepWorkload
from bench.models.workloads.job import Job, check_output
from bench.results.cell import Cell, StepInputs
from bench.results.schema import EffectiveSettings, Memory, Model

#: ``verbose`` of the Keras ``fit`` / ``predict`` calls. The source passed none (benchmark/keras_utils.py@v0.0.5:41,
#: 47), so Keras' default ``verbose="auto"`` applied (keras/trainers/trainer.py@v3.0.5:403, 668), which its
#: ``ProgbarLogger`` reads as 1 (keras/callbacks/progbar_logger.py@v3.0.5:31-34): the progress bar, updated after
#: every batch. Here the same, the bar written to a discarded stream (``progress_bar_discarded``).
VERBOSE = 1


def _set_precision(keras, stack: Stack, precision: str) -> str:
    if stack.keras_major == 2:
        keras.mixed_precision.set_global_policy(precision)
        return keras.mixed_precision.global_policy().name
    keras.config.set_dtype_policy(precision)
    return keras.config.dtype_policy().name


def _optimizer(keras, name: str, jit_compile: bool | str | None = None):
    """Keras' defaults (learning rate 1e-3), as the source compiled with ``optimizer="adam"`` / ``AdamW()``, but for
    ``jit_compile``, the cell's request: False turns a tf-keras optimizer's own XLA update step off
    (``optimizer_jit_kwargs``), as the epoch engine does; otherwise tf-keras' default, on with a GPU."""
    cls = {"adam": keras.optimizers.Adam, "adamw": keras.optimizers.AdamW}[name]
    return cls(**optimizer_jit_kwargs(cls, jit_compile))


def _repeat(batch, n: int):
    """``n`` copies of one ready batch as a tf.data pipeline for ``fit``/``predict`` (keras-hub tasks convert their
    input to tf.data themselves and reject Python generators). The source fed tf.data too, but SAM and SD batched
    each step from one example's slices (``from_tensor_slices(...).repeat((NUM_STEPS + 1) * B).batch(B)``,
    sam/keras/fit.py@v0.0.5:18-22, sam/keras/predict.py@v0.0.5:21-25, stable_diffusion/keras/fit.py@v0.0.5:18-22),
    a host copy per step that this skips; its text models read cached, ready batches as here
    (benchmark/keras_utils.py@v0.0.5:91-108, 118-132). On the JAX and torch backends TensorFlow is only the input
    pipeline, kept off the GPU by the worker (``frameworks.hide_gpus_from_tensorflow``)."""
    import tensorflow as tf

    return tf.data.Dataset.from_tensors(batch).repeat(n)


def jit_request(stack: Stack, workload: str, task: str, knob: bool | str | None) -> tuple[bool | str, str]:
    """(``jit_compile`` to request, who asked): the knob when set (a named variant), else what
    keras-benchmarks v0.0.5 requested for this cell (``source.SOURCE_JIT``: True/False from ``use_jit()``,
    or ``source.NOT_REQUESTED``) and its citation."""
    if knob is not None:
        return knob, "jit_compile knob (variant)"
    decl = source.source_jit(workload, task)
    if stack.keras_major is None:
        raise ValueError(f"{stack.id} is not a Keras stack: the Keras step engine does not run it")
    return decl.requested(stack.keras_major, stack.backend), decl.cite


def compile_job(keras, job: Job, task: str, requested: bool | str) -> Any:
    """Compile ``job.model`` for a Keras ``fit`` / ``predict`` step as the cell requests: ``fit`` with the job's
    optimizer (``_optimizer``: ``requested`` False turns tf-keras' optimizer XLA off too) and loss,
    ``jit_compile=requested`` unless ``source.NOT_REQUESTED`` (then no ``jit_compile`` argument: Keras' default);
    ``predict`` only when something is requested (SAM predict: the model as built, as the source predicted with
    it). A job with its own ``call`` (generate, SD predict) compiled what it calls when it was built. Returns the
    optimizer ``fit`` compiled with, else None.

    ``fit`` compiles without metrics, as the source did: its ``model.compile(loss=..., optimizer=...,
    jit_compile=...)`` (benchmark/bert/keras/fit.py@v0.0.5:22-26, gemma/keras/fit.py@v0.0.5:30-34,
    mistral/keras/fit.py@v0.0.5:31-35) went through keras-nlp 0.8.2's ``Task.compile``, which adds none
    (keras_nlp/src/models/task.py@0.8.2:101-106). keras-hub 0.32.0's task ``compile`` adds accuracy unless told
    otherwise (``TextClassifier`` ``metrics="auto"``; ``CausalLM`` ``weighted_metrics="auto"``), hence the explicit
    Nones; and Keras 3.15.1 keeps the metrics of an earlier compile (keras-hub's task compiles itself when built)
    when ``compile`` gets none (keras/src/trainers/trainer.py@v3.15.1:196-199), where the source's Keras 3.0.5
    dropped them (keras/trainers/trainer.py@v3.0.5:153-158): ``_drop_stale_metrics`` does what 3.0.5 did."""
    if job.call is not None:
        return None
    kw = {} if requested == source.NOT_REQUESTED else {"jit_compile": requested}
    if task == "fit":
        if job.optimizer is None:
            raise ValueError(f"the {task} job of {type(job.model).__name__} names no optimizer")
        optimizer = _optimizer(keras, job.optimizer, requested)
        job.model.compile(optimizer=optimizer, loss=job.loss, metrics=None, weighted_metrics=None, **kw)
        _drop_stale_metrics(job.model)
        return optimizer
    if kw:
        job.model.compile(**kw)
    return None


def _drop_stale_metrics(model) -> None:
    """Forget the compiled metrics of an earlier ``compile`` (Keras 3: ``Trainer._compile_metrics``), as Keras
    3.0.5's ``compile`` without metrics did (trainer.py@v3.0.5:157-158). tf.keras builds a fresh metrics container
    on every compile (tf_keras/src/engine/training.py@2.21.0:796-802): nothing to do there."""
    if getattr(model, "_compile_metrics", None) is not None:
        model._compile_metrics = None


def jit_in_effect(model) -> bool:
    """Whether ``model``'s train/predict functions compile with XLA (torch.compile on Keras' torch backend).
    Keras 3: its ``jit_compile`` property, which resolves "auto" when never set (keras 3.15.1
    ``keras/src/trainers/trainer.py`` ``_resolve_auto_jit_compile``); tf.keras: None when never set, and its
    ``make_train_function`` / ``make_predict_function`` compile with XLA only when it is truthy (tf_keras 2.15
    and keras 2.15 ``src/engine/training.py``)."""
    return bool(model.jit_compile)


def generate_compiler(backend: str, model) -> tuple[bool, str]:
    """(compiled, how) for a keras-hub / keras-nlp ``CausalLM.generate`` after a call, as
    ``CausalLM.make_generate_function`` decides (keras-hub 0.32.0 ``src/models/causal_lm.py``; keras-nlp 0.8.2
    ``GenerativeTask``): ``jax.jit`` on JAX whatever ``jit_compile`` says, ``tf.function`` with the model's
    ``jit_compile`` on TensorFlow (read from the function itself when it says), eager under
    ``torch.no_grad`` on torch; eager everywhere with ``run_eagerly``."""
    if backend == "torch":
        return False, "eager under torch.no_grad (CausalLM.make_generate_function)"
    if model.run_eagerly:
        return False, "eager (run_eagerly)"
    if backend == "jax":
        return True, "jax.jit (CausalLM.make_generate_function, whatever jit_compile says)"
    jit = getattr(model.generate_function, "_jit_compile", None)
    jit = bool(model.jit_compile if jit is None else jit)
    return jit, f"tf.function(jit_compile={jit}) (CausalLM.make_generate_function)"


def _set_up(keras, stack: Stack, w: StepWorkload, steps: int, tf32: str, requested: bool | str,
            requested_by: str) -> EffectiveSettings:
    """Set the framework's TF32 switches (``tf32``, the knob) and Keras' dtype policy for ``w``'s precision;
    returns the ``settings`` block so far: Keras' version and backend, the ``jit_compile`` request, ``steps``,
    the switches and the policy."""
    switches = math_mode.set_tf32(stack.backend, tf32)
    return EffectiveSettings(keras_version=keras.__version__, keras_backend=keras.backend.backend(),
                             jit_compile_requested=requested, jit_compile_requested_by=requested_by, steps=steps,
                             **switches, precision=_set_precision(keras, stack, w.model.precision))


def _time_steps(keras, job: Job, task: str, requested: bool | str, steps: int, timer: EpochTimer,
                effective: EffectiveSettings) -> Any:
    """Compile ``job`` and run its first step and ``steps`` timed ones on ``timer``: its own ``call`` when it has
    one, else Keras' ``fit`` (one epoch) or ``predict`` with the timing callback (``verbose`` and, for ``fit``, the
    optimizer as built, ``optimizer_record``, recorded in ``effective``). Returns the last step's output (None for
    ``fit``)."""
    optimizer = compile_job(keras, job, task, requested)
    if optimizer is not None:
        effective.optimizer = optimizer_record(optimizer)
    call = job.call
    if call is not None:
        return time_calls(lambda: call(job.model), steps, timer)
    effective.verbose = VERBOSE
    with progress_bar_discarded(VERBOSE):
        if task == "fit":
            job.model.fit(_repeat((job.inputs, job.targets), steps + 1), epochs=1, verbose=VERBOSE,
                          callbacks=[make_timing_callback(keras, timer, split_first=True)])
            return None
        return job.model.predict(_repeat(job.inputs, steps + 1), verbose=VERBOSE,
                                 callbacks=[make_timing_callback(keras, timer, split_first=True)])


def run(stack: Stack, w: StepWorkload, cell: Cell, cfg: dict[str, Any], settings: KerasStepSettings,
        telemetry=None) -> StepResult:
    """Build ``w``'s Keras model for ``cell``'s task, time its steps after the first (``StepInputs``), return blocks.

    ``settings``: ``bench.core.families.keras.KerasStepSettings``; ``jit_compile`` unset requests what the source
    requested for the cell (``jit_request``). The ``settings`` block records ``jit_compile_requested`` (True, False,
    "auto" or ``source.NOT_REQUESTED``), ``jit_compile_requested_by`` and ``jit_compile`` in effect, read
    from the model after the run (``jit_in_effect``; generate: ``generate_compiler``, also ``generate_function``).

    Raises:
        Unsupported: ``jit_compile=True`` on Keras' torch backend without torch.compile's toolchain
            (``toolchain.torch_compile_blocker``).
        RuntimeError: ``generate`` stopped before the fixed length.
    """
    task, device, inputs = cell.task, cell.device, cell.inputs_as(StepInputs)
    batch, steps = inputs.batch_size, inputs.steps
    requested, requested_by = jit_request(stack, w.name, task, settings.jit_compile)
    if stack.backend == "torch" and requested is True:
        toolchain.require_torch_compile(device, "jit_compile=True on Keras' PyTorch backend")
    keras = import_keras(stack)
    effective = _set_up(keras, stack, w, steps, settings.tf32, requested, requested_by)
    keras.utils.set_random_seed(0)
    job = w.model.keras_job(stack, keras, task, cfg, batch,
                            {"jit_compile": requested, "jit_compile_knob": settings.jit_compile,
                             "tf32": settings.tf32})
    barrier = make_barrier(stack.backend, device)
    timer = EpochTimer(barrier, telemetry)
    try:
        result = _time_steps(keras, job, task, requested, steps, timer, effective)
        barrier()
    finally:
        if telemetry:
            telemetry.stop()
    if task == "generate":
        effective.jit_compile, effective.generate_function = generate_compiler(stack.backend, job.model)
    else:
        effective.jit_compile = jit_in_effect(job.model)
    effective.generated_tokens = job.checked_tokens(result)
    effective = EffectiveSettings(**{**effective.model_dump(exclude_unset=True), **job.recorded})
    trainable = int(sum(np.prod(v.shape) for v in job.model.trainable_weights))
    return StepResult(
        output=output_block(check_output(task, result)),
        settings=effective,
        timer=timer,
        model=Model(params_total=int(job.model.count_params()), params_trainable=trainable),
        memory=Memory(device_peak_bytes=frameworks.device_peak_bytes(stack.backend, device)),
        notes=list(job.notes),
        profile_run=_profile_run(keras, job, task),
    )


def _profile_run(keras, job: Job, task: str) -> rerun.ProfileRun:
    """More steps of ``job`` for ``bench run --profile``, as ``_time_steps`` runs them: its own ``call``, else one
    more ``fit`` or ``predict`` over ready batches (``_repeat``)."""
    call = job.call
    if call is not None:
        return rerun.calls(lambda: call(job.model))
    if task == "fit":
        return rerun.keras_fit(keras, job.model, lambda n: {"x": _repeat((job.inputs, job.targets), n)}, VERBOSE,
                               progress_bar_discarded)
    return rerun.keras_predict(keras, job.model, lambda n: _repeat(job.inputs, n), VERBOSE, progress_bar_discarded)
