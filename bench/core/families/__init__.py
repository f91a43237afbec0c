"""The framework families: the one registry. Standard library only (the host validates knobs with it).

A family is what a stack's ``family`` field names: one way of training a workload (Keras' ``fit``, a plain PyTorch
loop, a plain JAX loop) with its typed settings (knobs) and its engines. It is a plug-in in two halves, split by the
layering (docs/layout.md), both named by its one ``Family`` line in ``FAMILIES``:

- its settings, ``bench.core.families.<name>``: standard library only, because the host (bare ``python3``)
  validates a cell's knobs and ``bench knobs`` lists them before any framework exists;
- its run-time package, ``bench.models.engines.<name>`` (``Family.package``), imported only inside a cell or probe, by
  dotted path: ``adapter`` (``ADAPTER``: the barrier, GPUs seen, TF32 switches and peak memory of its
  ``framework``), ``epochs`` (the epoch engine: ``fit``), ``steps`` (the step engine: ``run``; where the family has
  step settings), ``handloop`` (the free-running loop of ``bench.run.fidelity``: ``run``) and their helpers.

Every list keyed by family derives from ``FAMILIES``: the knobs' lists (``bench.core.knobs``), the engine modules
and the workload builder each trains (``bench.models.engines``), the frameworks the harness drives and their adapters
(``FRAMEWORKS``, ``bench.models.engines.frameworks``), the free-running loops (``bench.run.fidelity``).
``tests/core/test_families.py`` fails when another module spells a list of family names.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.core.families import jax, keras, torch
from bench.core.settings import Settings

#: The two kinds of engine, each named as its scenario (``bench.run.scenarios``) and as the module of a family's
#: package that implements it: ``epochs`` (classic and tuning suites: a workload trained on its dataset) and
#: ``steps`` (the paper suite: step-timed tasks).
KINDS = ("epochs", "steps")


@dataclass(frozen=True)
class Family:
    """One framework family, as its ``FAMILIES`` line declares it.

    Attributes:
        name: what a stack's ``family`` field says (``bench.core.stacks.Stack.family``).
        package: its run-time package (dotted path; imported lazily, inside a cell).
        framework: the import name of the framework its ``adapter`` drives; a stack's ``backend`` names one
            (Keras' adapter is TensorFlow's: the backend only Keras runs on; Keras on JAX or PyTorch uses theirs).
        builder: the ``bench.models.workloads.Workload`` attribute holding the model this family trains.
        model_label: how a reason names that model's framework (``bench.models.engines.missing_model``).
        epochs: the settings class of its epoch engine (every family has one).
        steps: the settings class of its step engine; None: the family runs no step-timed workload.
    """

    name: str
    package: str
    framework: str
    builder: str
    model_label: str
    epochs: type[Settings]
    steps: type[Settings] | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of engine it has (of ``KINDS``)."""
        return ("epochs", "steps") if self.steps is not None else ("epochs",)

    def settings(self, kind: str) -> type[Settings] | None:
        """Its settings class for engines of ``kind`` (None: it has no such engine)."""
        return {"epochs": self.epochs, "steps": self.steps}.get(kind)

    def module(self, part: str) -> str:
        """The dotted path of a module of its package (``adapter``, ``epochs``, ``steps``, ``handloop``...)."""
        return f"{self.package}.{part}"


#: The families, one line each: the one list every other list of families derives from.
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("keras", "bench.models.engines.keras", "tensorflow", "build_keras", "keras",
           keras.KerasEpochSettings, keras.KerasStepSettings),
    Family("torch", "bench.models.engines.torch", "torch", "build_torch", "torch",
           torch.TorchEpochSettings, torch.TorchStepSettings),
    Family("jax", "bench.models.engines.jax", "jax", "build_flax", "Flax NNX", jax.JaxEpochSettings),
)}

#: The import names of the frameworks the harness drives, one adapter each (a stack's ``backend`` is one).
FRAMEWORKS = tuple(f.framework for f in FAMILIES.values())


def framework_family(backend: str) -> Family:
    """The family whose package holds the adapter of the framework ``backend`` (``FRAMEWORKS``).

    Raises:
        ValueError: no family drives that framework.
    """
    for f in FAMILIES.values():
        if f.framework == backend:
            return f
    raise ValueError(f"unknown backend {backend!r}")
