"""``model.fit`` on the four Keras stacks, timed by a callback at the cell's ``sync`` cadence
(``bench.models.engines.keras.runtime.make_timing_callback``), fed by the data pipelines of
``bench.models.engines.keras.data``.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.core.families.keras import KerasEpochSettings
from bench.core.stacks import Stack
from bench.instruments.profile import rerun
from bench.instruments.timing import Cadence, EpochClock, EpochTimer, clock, fit_metrics
from bench.models.datasets import Dataset
from bench.models.engines import EpochResult, frameworks, math_mode, toolchain
from bench.models.engines.epochloop import checked_augment
from bench.models.engines.frameworks import make_barrier
from bench.models.engines.keras.data import (
    AUGMENTED_PLACEMENT,
    augmented_train_data,
    model_inputs,
    placement,
    shuffle_buffer,
    source_labels,
    train_data,
    with_batches,
)
from bench.models.engines.keras.progress import fit_progress, progress_record
from bench.models.engines.keras.runtime import import_keras, make_timing_callback, set_random_seed
from bench.models.workloads import Workload
from bench.results.cell import Cell, EpochInputs
from bench.results.schema import EffectiveSettings, Memory, Metrics, Model


def make_optimizer(keras, workload: Workload, jit_compile: bool | str | None = None):
    """The Keras optimizer of ``workload.optimizer`` with every hyper-parameter explicit (Keras 3 and tf.keras
    defaults differ from the Keras 2.0.8 scripts': ``bench.models.workloads.common.KERAS208``).

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
    return cls(learning_rate=lr, **kw, **optimizer_jit_kwargs(cls, jit_compile))


def optimizer_jit_kwargs(cls, jit_compile: bool | str | None) -> dict[str, Any]:
    """The ``jit_compile`` argument a Keras optimizer class ``cls`` gets from a cell's ``jit_compile`` (knob or
    request): ``{"jit_compile": False}`` where it is False and ``cls`` takes the argument (tf-keras: its own XLA
    update step, on by default with a GPU, tf_keras/src/optimizers/optimizer.py@2.21.0:49, 59-67; adam.py:110,
    adamw.py:104), else nothing (Keras 3 optimizers have no such argument; True is tf-keras' default)."""
    return {"jit_compile": False} if jit_compile is False and "jit_compile" in inspect.signature(cls).parameters \
        else {}


def optimizer_record(optimizer) -> dict[str, Any]:
    """What the Keras optimizer was built with, read back from it (``settings.optimizer``): its class, initial
    learning rate, the hyper-parameters of its rule (AdamW's ``weight_decay`` too) and the learning-rate schedule
    (None: constant); on tf-keras its ``jit_compile`` as it took effect."""
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
    for key in ("rho", "momentum", "centered", "epsilon", "beta_1", "beta_2", "amsgrad", "weight_decay"):
        if cfg.get(key) is not None:  # weight_decay: None where the rule has none
            out[key] = cfg[key] if isinstance(cfg[key], bool) else float(cfg[key])
    if hasattr(optimizer, "jit_compile"):  # tf-keras: as it took effect (False without a GPU: optimizer.py:59-67)
        out["jit_compile"] = bool(optimizer.jit_compile)
    return out


@contextlib.contextmanager
def progress_bar_discarded(verbose: int):
    """With ``verbose`` 1, ``sys.stdout`` goes to ``os.devnull`` for the block: Keras' progress bar (``progress=bar``,
    what ``fit(verbose=1)`` prints, as the Keras 2.0.8 example scripts ran: examples/mnist_mlp.py@2.0.8:53) is
    written, and discarded, not the cell's log. Keras 3 and tf.keras print it through ``sys.stdout``
    (keras/src/utils/io_utils.py@v3.15.1 ``print_msg``). With 0 nothing is redirected."""
    if not verbose:
        yield
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def fit(stack: Stack, workload: Workload, ds: Dataset, cell: Cell, settings: KerasEpochSettings,
        telemetry=None) -> EpochResult:
    """Train ``workload`` on ``ds`` for ``cell``'s epochs of its batch size (``EpochInputs``) on its device.

    ``settings``: ``bench.core.families.keras.KerasEpochSettings`` (defaults, allowed values and meaning there). The
    workload's augmentation, where its source had one and ``augment`` is not false, replaces the data pipeline
    (``augmented_train_data``). ``fit`` reports each batch's progress as ``settings.progress`` says, else as the
    workload's source did (``Workload.progress``; ``bench.models.engines.keras.progress``). ``metrics.fit_call_s`` is
    the whole ``fit`` call between barriers, and ``metrics.fit_call_s_per_epoch`` that over the epochs: the 2017
    comparison's metric, as its notebooks timed ``model.fit`` (``bench.instruments.timing.fit_metrics``); each epoch
    from ``on_epoch_begin`` to after its validation is in ``metrics.fit_epoch_s``
    (``bench.instruments.timing.EpochClock``).

    Raises:
        Unsupported: ``augment`` asked for where the source has none, or with another data pipeline.
    """
    device, batch_size = cell.device, cell.inputs_as(EpochInputs).batch_size
    augmenting = check_supported(stack, workload, device, settings)
    keras = import_keras(stack)
    effective = set_up(keras, stack, settings)
    model, optimizer = compiled_model(keras, workload, ds, settings, effective)
    ds = source_labels(keras, workload, ds)
    effective.optimizer = optimizer_record(optimizer)
    fit_kw, trained = fit_data(keras, stack, workload, ds, batch_size, settings, augmenting, effective)

    barrier = make_barrier(stack.backend, device)
    timer = EpochTimer(barrier, telemetry, Cadence.parse(settings.sync))
    epoch_clock = EpochClock(barrier)
    verbose, callbacks, progress = fit_callbacks(keras, settings.progress or workload.progress, timer, epoch_clock)
    history, fit_call_s = timed_fit(model, {**fit_kw, "epochs": cell.inputs_as(EpochInputs).epochs, "verbose": verbose,
                                            "validation_data": (model_inputs(ds.x_val), ds.y_val),
                                            "validation_batch_size": batch_size, "callbacks": callbacks},
                                    barrier, telemetry)
    # the model's facts measured on the trained model, outside the timed window
    facts = workload.keras_model_facts(keras, model) if workload.keras_model_facts else {}
    timed = timer.summary(batch_size, trained)
    effective.steps_per_call = steps_per_call(settings.steps_per_execution, timed["steps_per_epoch"])
    return EpochResult(
        settings=EffectiveSettings(**{**effective.model_dump(exclude_unset=True), **progress, **facts}),
        metrics=Metrics(**timed, **fit_metrics(epoch_clock.epoch_s, fit_call_s)),
        history={k: [float(v) for v in vals] for k, vals in history.history.items()},
        model=Model(params_total=int(model.count_params()),
                    params_trainable=int(sum(np.prod(w.shape) for w in model.trainable_weights))),
        memory=Memory(device_peak_bytes=frameworks.device_peak_bytes(stack.backend, device)),
        profile_run=rerun.keras_fit(keras, model, lambda n: with_batches(keras, fit_kw, n, batch_size), verbose,
                                    progress_bar_discarded, callbacks[1:],
                                    rerun.TimedCalls(effective.steps_per_call, fit_kw)),
    )


def steps_per_call(steps_per_execution: int, steps_per_epoch: int) -> int:
    """The most steps one call of the compiled train function ran (``settings.steps_per_call``): ``steps_per_execution``
    capped at the epoch's training steps. Keras ends an execution at the epoch's last batch ("At most, one full epoch
    will be run each execution", keras/src/trainers/trainer.py@v3.15.1:122-125: ``EpochIterator._enumerate_iterator``
    starts a call every ``steps_per_execution`` steps of the epoch, each backend's loop stops where the epoch's data
    ends; tf-keras: ``DataHandler._truncate_execution_to_epoch``, tf_keras/src/engine/data_adapter.py), so the tuning
    study's 512 at 235 steps an epoch ran 235 a call. An epoch runs ceil(steps_per_epoch / this) calls, its last one
    the remainder."""
    return max(1, min(int(steps_per_execution), int(steps_per_epoch)))


def timed_fit(model, fit_kw: dict[str, Any], barrier: Callable[[], None], telemetry) -> tuple[Any, float]:
    """``model.fit(**fit_kw)`` between barriers, its progress bar's output discarded; the telemetry's window closed
    after it, whatever it raised. Returns (Keras' history, the call's seconds)."""
    try:
        barrier()
        start = clock()
        with progress_bar_discarded(fit_kw["verbose"]):
            history = model.fit(**fit_kw)
        barrier()
        return history, clock() - start
    finally:
        if telemetry:
            telemetry.stop()


def fit_callbacks(keras, form: str, timer: EpochTimer,
                  epoch_clock: EpochClock) -> tuple[int, list[Any], dict[str, Any]]:
    """``fit``'s ``verbose`` and callbacks: the timing callback first (``make_timing_callback``), then the progress
    form's (``fit_progress``); and the ``settings`` keys that record the form, ``verbose`` and what the callbacks do
    to Keras' batch path (``progress_record``)."""
    verbose, extra = fit_progress(keras, form)
    callbacks = [make_timing_callback(keras, timer, epochs=epoch_clock), *extra]
    return verbose, callbacks, progress_record(keras, form, verbose, callbacks)


def check_supported(stack: Stack, workload: Workload, device: str, settings: KerasEpochSettings) -> bool:
    """Raises ``Unsupported`` for a cell this engine cannot run: ``augment`` where the source has none or with
    another data pipeline (``checked_augment``), ``jit_compile=True`` on Keras' PyTorch backend without
    torch.compile's toolchain. Returns whether the cell trains on the source's augmentation."""
    augmenting = checked_augment(settings, workload)
    if stack.backend == "torch" and settings.jit_compile is True:
        toolchain.require_torch_compile(device, "jit_compile=True on Keras' PyTorch backend")
    return augmenting


def set_up(keras, stack: Stack, settings: KerasEpochSettings) -> EffectiveSettings:
    """Set the framework's TF32 switches (the ``tf32`` knob), Keras' global dtype policy (``precision``) and the
    seeds (0); returns the ``settings`` block so far (Keras' version, the switches)."""
    effective = EffectiveSettings(keras_version=keras.__version__, **math_mode.set_tf32(stack.backend, settings.tf32))
    keras.mixed_precision.set_global_policy(settings.precision)
    set_random_seed(keras, 0)
    return effective


def compiled_model(keras, workload: Workload, ds: Dataset, settings: KerasEpochSettings,
                   effective: EffectiveSettings) -> tuple[Any, Any]:
    """``workload``'s Keras model for ``ds``' shapes with its model knobs from ``settings``, compiled with its
    optimizer (``make_optimizer``), loss and metrics, ``steps_per_execution`` and ``jit_compile`` (unset: Keras'
    own). Records in ``effective`` the dtype policy, the jit request and what Keras made of it, the loss, labels,
    backend and data pipeline. Returns (model, optimizer)."""
    model = workload.build_keras(keras, ds.meta, **{k: getattr(settings, k) for k in workload.keras_knobs})
    compile_kw: dict[str, Any] = {"steps_per_execution": settings.steps_per_execution}
    if settings.jit_compile is not None:  # else Keras' own (Keras 2: step off, optimizer's XLA on; Keras 3: 'auto')
        compile_kw["jit_compile"] = settings.jit_compile
    optimizer = make_optimizer(keras, workload, settings.jit_compile)
    labels = workload.labels
    model.compile(optimizer=optimizer, loss=labels.loss, metrics=list(labels.metrics), **compile_kw)
    jit = getattr(model, "jit_compile", getattr(model, "_jit_compile", None))
    effective.precision = keras.mixed_precision.global_policy().name
    effective.jit_compile_requested = "keras default" if settings.jit_compile is None else settings.jit_compile
    effective.jit_compile = jit
    effective.steps_per_execution = compile_kw["steps_per_execution"]
    effective.keras_backend = keras.backend.backend()
    effective.data_pipeline = settings.data_pipeline
    effective.loss = labels.loss
    effective.labels = {"form": labels.form, "metrics": list(labels.metrics), "source": labels.source}
    return model, optimizer


def fit_data(keras, stack: Stack, workload: Workload, ds: Dataset, batch_size: int, settings: KerasEpochSettings,
             augmenting: bool, effective: EffectiveSettings) -> tuple[dict[str, Any], int]:
    """``model.fit``'s training-data arguments: the source's augmentation where it is in effect (``augmenting``,
    ``check_supported``'s answer: ``augmented_train_data``), else the ``data_pipeline`` knob's (``train_data``);
    records the pipeline, where the data lives and the shuffle buffer in ``effective``. Returns (fit keyword
    arguments, examples trained per epoch: an augmented epoch of full batches drops the remainder)."""
    effective.augment = augmenting
    aug = workload.augmentation
    if augmenting and aug is not None:  # augment_in_effect: only a workload with an augmentation augments
        fit_kw, effective.augmentation = augmented_train_data(keras, aug, ds, batch_size)
        effective.data_pipeline, effective.train_data_placement = "host_augmentation", AUGMENTED_PLACEMENT
        effective.shuffle_buffer = ds.n_train
        return fit_kw, ds.n_train // batch_size * batch_size if aug.drop_remainder else ds.n_train
    fit_kw = train_data(keras, settings.data_pipeline, ds, batch_size)
    effective.train_data_placement = placement(settings.data_pipeline, stack.keras_major or 0, stack.backend)
    effective.shuffle_buffer = shuffle_buffer(settings.data_pipeline, ds.n_train)
    return fit_kw, ds.n_train
