"""Engines run a task of a workload on a stack inside the cell's own process.

Two declared shapes, each implemented by one module per engine family (``keras``, ``torch``; ``jax`` has an
epoch engine only):

- ``EpochEngine`` (``keras_engine``: ``model.fit`` on the Keras stacks; ``torch_engine``: a plain PyTorch
  loop; ``jax_engine``: a plain JAX loop over a Flax NNX model) trains a classic workload on its dataset and
  returns an ``EpochResult``.
- ``StepEngine`` (``keras_steps``, ``torch_steps``) times the tasks of a step-timed workload (``paper``
  suite) and returns a ``StepResult``.

The framework specifics they share (barrier, GPU visibility, peak memory) live in ``bench.run.engines.frameworks``,
one class per framework; the TF32 knob and its meaning in ``math_mode``, torch.compile's toolchain check in
``toolchain``, out-of-memory errors in ``oom``, the GEMM benchmark in ``gemm``.

The record blocks an engine owns are the schema's dataclasses (``bench.results.schema``), so mypy checks them
from the engine to the worker; the worker turns them into the record's JSON in one place (``schema.to_json``).
The pattern, for a new engine (e.g. plain JAX, modelled on ``torch_engine``)::

    effective = EffectiveSettings(torch_version=torch.__version__)   # declared settings: typed keywords
    effective.update({"precision": precision, "compile": mode})       # knobs in effect, other engine keys: extra
    effective.update(math_mode.set_tf32("torch", settings.tf32))     # a mapping: declared keys set, others extra
    metrics = Metrics(**timer.summary(batch_size, trained))        # a mapping's keys: each must be declared
    metrics.update(fit_metrics(epoch_clock.epoch_s, fit_call_s))
    return EpochResult(settings=effective, metrics=metrics, history=hist,
                       model=Model(params_total=..., params_trainable=...),
                       memory=Memory(device_peak_bytes=frameworks.device_peak_bytes("torch", device)))

A block writes exactly the fields it was given (a given None stays a null, an unset field stays absent), so
returning a dataclass writes the same JSON as the dict it replaced.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from bench.results.schema import EffectiveSettings, Memory, Metrics, Model, Output

if TYPE_CHECKING:
    from bench.core.knobs import Settings
    from bench.core.stacks import Stack
    from bench.run.datasets import Dataset
    from bench.run.telemetry.sampler import NullTelemetry, Telemetry
    from bench.run.timing import EpochTimer
    from bench.run.workloads import StepWorkload, Workload


class Unsupported(Exception):
    """The cell cannot run on this stack or with these settings; the message is the reason."""


@dataclass
class EpochResult:
    """What an epoch engine returns: the record blocks it owns.

    settings: the settings in effect (framework versions, precision policy, TF32 switches, pipeline...; knobs and
        engine-specific keys in ``settings.extra``).
    metrics: ``EpochTimer.summary`` and ``fit_metrics``: ms/step statistics, first and steady epoch (s), samples/s.
    history: per-epoch ``loss``, ``accuracy``, ``val_loss``, ``val_accuracy`` (an open mapping in the record).
    model: ``params_total``, ``params_trainable`` (and ``params_effective`` where counted).
    memory: ``device_peak_bytes`` (bytes; None on CPU).
    """

    settings: EffectiveSettings
    metrics: Metrics
    history: dict[str, list[float]]
    model: Model
    memory: Memory


@dataclass
class StepResult:
    """What a step engine returns: the settings in effect, the timer holding the first step apart from the
    timed ones (the worker derives ms/step and throughput from it), model counts, peak memory, the last
    step's output shapes and finiteness (``bench.run.workloads.check_output``; None without an array), and the
    notes the record must carry (its differences from the source)."""

    output: Output | None
    settings: EffectiveSettings
    timer: EpochTimer
    model: Model
    memory: Memory
    notes: list[str] = field(default_factory=list)


def output_block(checked: dict[str, Any] | None) -> Output | None:
    """``bench.run.workloads.check_output``'s answer as the record's ``output`` block (None stays None)."""
    return None if checked is None else Output(shapes=checked["shapes"], finite=checked["finite"])


class EpochEngine(Protocol):
    """What ``keras_engine`` and ``torch_engine`` implement (modules satisfy it through their ``fit``)."""

    def fit(self, stack: Stack, workload: Workload, ds: Dataset, device: str, epochs: int, batch_size: int,
            settings: Settings, telemetry: Telemetry | NullTelemetry | None = None) -> EpochResult:
        """Train ``workload`` on ``ds`` for ``epochs`` epochs of ``batch_size`` examples on ``device``.

        Raises:
            Unsupported: the settings cannot run on this stack or in this image.
        """


class StepEngine(Protocol):
    """What ``keras_steps`` and ``torch_steps`` implement (modules satisfy it through their ``run``)."""

    def run(self, stack: Stack, w: StepWorkload, task: str, cfg: dict[str, Any], batch: int, steps: int,
            device: str, settings: Settings,
            telemetry: Telemetry | NullTelemetry | None = None) -> StepResult:
        """Build ``w``'s model for ``task`` from ``cfg``, run one step, then time ``steps`` more.

        Raises:
            Unsupported: the settings cannot run on this stack or in this image.
        """


_MODULES = {"epochs": {"keras": "keras.fit", "torch": "torch.fit", "jax": "jax.fit"},
            "steps": {"keras": "keras.steps", "torch": "torch.steps"}}


#: The ``Workload`` builder each epoch engine trains.
BUILDERS = {"keras": "build_keras", "torch": "build_torch", "jax": "build_flax"}


def missing_model(engine: str, workload: Workload) -> str | None:
    """Why ``workload`` cannot be trained by ``engine``'s epoch engine: it has no model for that framework (the
    reason its cells are recorded with), else None."""
    builder = BUILDERS.get(engine)
    if builder is None or getattr(workload, builder, None) is not None:
        return None
    framework = {"jax": "Flax NNX"}.get(engine, engine)
    return f"{workload.name} has no {framework} definition (Workload.{builder}) yet: the {engine} engine cannot run it"


def _module(engine: str, kind: str):
    try:
        name = _MODULES[kind][engine]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r} or kind {kind!r}") from None
    return importlib.import_module(f"bench.run.engines.{name}")


def epoch_engine(engine: str) -> EpochEngine:
    """The epoch engine of a stack's ``engine`` field (``keras``, ``torch`` or ``jax``); imported lazily.

    Raises:
        ValueError: unknown engine.
    """
    return cast(EpochEngine, _module(engine, "epochs"))


def step_engine(engine: str) -> StepEngine:
    """The step engine of a stack's ``engine`` field (``keras`` or ``torch``); imported lazily.

    Raises:
        ValueError: unknown engine.
    """
    return cast(StepEngine, _module(engine, "steps"))
