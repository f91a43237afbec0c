"""Engines run a task of a workload on a stack inside the cell's own process.

Each framework family (``bench.core.families.FAMILIES``: ``keras``, ``torch``, ``jax``) has one package here,
``bench.models.engines.<family>``, imported only when a cell needs it (by dotted path, from its ``Family`` line). What
a family package provides, by module:

- ``epochs``: the ``EpochEngine`` (``fit``), which trains a classic workload on its dataset and returns an
  ``EpochResult`` (``keras``: ``model.fit`` on the Keras stacks; ``torch``: a plain PyTorch loop; ``jax``: a plain
  JAX loop over a Flax NNX model);
- ``steps``: the ``StepEngine`` (``run``), which times the tasks of a step-timed workload (``paper`` suite) and
  returns a ``StepResult`` (``keras`` and ``torch``: the families with step settings);
- ``adapter``: ``ADAPTER``, the ``bench.models.engines.frameworks.Framework`` of the framework it drives (barrier, GPUs
  seen, TF32 switches, peak memory; ``Family.framework``);
- ``handloop``: the free-running loop ``bench.run.fidelity`` compares the harness with (``HandLoop``).

What the families share stays here: these shapes and results, the adapter base and the calls by backend name
(``frameworks``), the TF32 knob and its meaning (``math_mode``), torch.compile's toolchain check (``toolchain``),
out-of-memory errors (``oom``), the GEMM benchmark (``gemm``), the tuning study's tf.data pipeline, which the
Keras and JAX engines both build (``tfdata``).

The record blocks an engine owns are the schema's pydantic models (``bench.results.schema``), so mypy checks them
from the engine to the worker; the worker turns them into the record's JSON (``model_dump(exclude_unset=True)``).
The pattern, for a new engine (modelled on ``bench.models.engines.torch.epochs``)::

    effective = EffectiveSettings(torch_version=torch.__version__,   # declared settings: typed keywords
                                  **math_mode.set_tf32("torch", settings.tf32))  # a mapping's keys: each declared
    effective.precision = precision                                  # a knob in effect: assigned, validated
    metrics = Metrics(**timer.summary(batch_size, trained), **fit_metrics(epoch_clock.epoch_s, fit_call_s))
    return EpochResult(settings=effective, metrics=metrics, history=hist,
                       model=Model(params_total=..., params_trainable=...),
                       memory=Memory(device_peak_bytes=frameworks.device_peak_bytes("torch", device)))

A block writes exactly the fields it was given (a given None stays a null, an unset field stays absent), so
the record says what the engine produced: a null is a value it reported as missing, an absent field one it never
produced. A block takes its declared fields only (``bench.results.schema.declare.Block``): a key it does not declare
is a ``TypeError`` in the constructor and an ``AttributeError`` when assigned, so a new key is declared first (in
``bench.results.schema``, with its meaning and unit).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from bench.core.families import FAMILIES
from bench.results.schema import EffectiveSettings, Memory, Metrics, Model, Output

if TYPE_CHECKING:
    from bench.core.settings import Settings
    from bench.core.stacks import Stack
    from bench.instruments.profile.rerun import ProfileRun
    from bench.instruments.telemetry.sampler import NullTelemetry, Telemetry
    from bench.instruments.timing import EpochTimer
    from bench.models.datasets import Dataset
    from bench.models.workloads import StepWorkload, Workload
    from bench.results.cell import Cell


class Unsupported(Exception):
    """The cell cannot run on this stack or with these settings; the message is the reason."""


class NoisyMeasurement(RuntimeError):
    """A free-running run (``HandLoop``) that measured no time for its steady epochs: the machine's noise exceeded
    the epochs it measures, so there is no ms/step to report (Keras' loop: its ``epochs``-epoch ``fit`` took no
    longer than its 1-epoch ``fit``)."""


@dataclass
class EpochResult:
    """What an epoch engine returns: the record blocks it owns.

    settings: the settings in effect (framework versions, precision policy, TF32 switches, pipeline, the knobs as
        they took effect...).
    metrics: ``EpochTimer.summary`` and ``fit_metrics``: ms/step statistics, first and steady epoch (s), samples/s,
        the whole training call (s) and the 2017 metric, that call over the epochs (s/epoch).
    history: per-epoch ``loss``, ``accuracy``, ``val_loss``, ``val_accuracy`` (an open mapping in the record).
    model: ``params_total``, ``params_trainable`` (and ``params_effective`` where counted).
    memory: ``device_peak_bytes`` (bytes; None on CPU).
    profile_run: more steady steps of the trained model for ``bench run --profile``, run after the engine returned
        (``bench.instruments.profile.rerun.ProfileRun``; None: the engine offers none).
    """

    settings: EffectiveSettings
    metrics: Metrics
    history: dict[str, list[float]]
    model: Model
    memory: Memory
    profile_run: ProfileRun | None = None


@dataclass
class StepResult:
    """What a step engine returns: the settings in effect, the timer holding the first step apart from the
    timed ones (the worker derives ms/step and throughput from it), model counts, peak memory, the last
    step's output shapes and finiteness (``bench.models.workloads.job.check_output``; None without an array), the
    notes the record must carry (its differences from the source) and, for ``bench run --profile``, more steps of
    the task (``profile_run``, as ``EpochResult``'s)."""

    output: Output | None
    settings: EffectiveSettings
    timer: EpochTimer
    model: Model
    memory: Memory
    notes: list[str] = field(default_factory=list)
    profile_run: ProfileRun | None = None


def output_block(checked: dict[str, Any] | None) -> Output | None:
    """``bench.models.workloads.job.check_output``'s answer as the record's ``output`` block (None stays None)."""
    return None if checked is None else Output(shapes=checked["shapes"], finite=checked["finite"])


class EpochEngine(Protocol):
    """What a family's ``epochs`` module implements (the module satisfies it through its ``fit``)."""

    def fit(self, stack: Stack, workload: Workload, ds: Dataset, cell: Cell, settings: Settings,
            telemetry: Telemetry | NullTelemetry | None = None) -> EpochResult:
        """Train ``workload`` on ``ds`` as ``cell`` says, whole: its ``device`` and its resolved inputs
        (``cell.inputs_as(EpochInputs)``: ``epochs`` epochs of ``batch_size`` examples); ``settings``: its knobs,
        typed (``cell.settings`` parsed by the family's settings class).

        Raises:
            Unsupported: the settings cannot run on this stack or in this image.
        """


class StepEngine(Protocol):
    """What a family's ``steps`` module implements (the module satisfies it through its ``run``)."""

    def run(self, stack: Stack, w: StepWorkload, cell: Cell, cfg: dict[str, Any], settings: Settings,
            telemetry: Telemetry | NullTelemetry | None = None) -> StepResult:
        """Build ``w``'s model for ``cell``'s task from ``cfg`` (the model's configuration at the cell's size, with its
        sequence length), run one step of ``cell.inputs_as(StepInputs).batch_size`` examples on ``cell.device``,
        then time ``steps`` more.

        Raises:
            Unsupported: the settings cannot run on this stack or in this image.
        """


class HandLoop(Protocol):
    """What a family's ``handloop`` module implements (through its ``run``): the free-running loop of
    ``bench.run.fidelity``, the same model and data with no hooks at all."""

    def run(self, *, stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch: int,
            tf32: str) -> dict[str, float]:
        """Train ``workload`` on ``ds`` for ``epochs`` epochs of ``batch`` examples on ``device`` (``cpu``/``gpu``)
        under the ``tf32`` knob's mode, timed as blocks. Keyword-only: two strings and two integers in a row.

        Returns:
            ``first_epoch_s`` (the compiling epoch), ``steady_s`` (the ``epochs - 1`` others, one block) and,
            where each run pays a cost before its first step, ``fit_call_overhead_s``.

        Raises:
            NoisyMeasurement: no steady time was measured.
        """


def missing_model(engine: str, workload: Workload) -> str | None:
    """Why ``workload`` cannot be trained by ``engine``'s epoch engine: it has no model for that family's framework
    (its ``Family.builder`` is unset; the reason its cells are recorded with), else None."""
    family = FAMILIES.get(engine)
    if family is None or getattr(workload, family.builder, None) is not None:
        return None
    return (f"{workload.name} has no {family.model_label} definition (Workload.{family.builder}) yet: the {engine} "
            "engine cannot run it")


def _module(engine: str, kind: str):
    family = FAMILIES.get(engine)
    if family is None or kind not in family.kinds:
        raise ValueError(f"unknown engine {engine!r} or kind {kind!r}")
    return importlib.import_module(family.module(kind))


def epoch_engine(engine: str) -> EpochEngine:
    """The epoch engine of a stack's ``family`` field (a family: ``bench.core.families.FAMILIES``), the ``epochs``
    module of its package; imported lazily.

    Raises:
        ValueError: unknown engine.
    """
    return cast(EpochEngine, _module(engine, "epochs"))


def step_engine(engine: str) -> StepEngine:
    """The step engine of a stack's ``family`` field (a family with step settings), the ``steps`` module of its
    package; imported lazily.

    Raises:
        ValueError: unknown engine, or one without a step engine.
    """
    return cast(StepEngine, _module(engine, "steps"))
