"""The cell: one unit of work (a workload's task on a stack, at a size, with its inputs) and its identity.

A pydantic model (this package runs in the images, each of which installs pydantic): the plan builds it with every
input resolved (``bench.run.plan``), the runner writes it as the worker's input file (``to_dict``), the worker reads
it back (``from_dict``) and the scenario hands it to the engine whole.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationInfo, field_validator

from bench.core.request import timeout_for


class Inputs(BaseModel):
    """A scenario's measurement inputs for one cell, every one resolved by the plan (``bench.run.plan``, through its
    scenario's ``inputs``: a value given, else the workload's own at the cell's size), which the worker, the
    scenario and the engine read as they are and never resolve again. Each changes what is measured, so a cell run
    with another value is another record, never a resumed one: the cell id names those set off their default, in
    the order of the model's fields, which the ids of the records on disk rely on: a new input goes last in its
    scenario's class, never into this base class (whose fields come first and would reorder the ids that name
    several inputs).

    Attributes:
        batch_size: examples per step.
        named: the inputs the plan set off their default (an option given with another value than the workload's
            own at the size), which the cell id names (``Cell.id``); a step-timed cell's batch size always (its
            variant, ``bs<N>``, names it, and the id then leaves it out).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_size: PositiveInt
    named: tuple[str, ...] = ()


class EpochInputs(Inputs):
    """The inputs of a cell fitted on a dataset for some epochs (the ``epochs`` scenario: the classic and tuning
    suites).

    Attributes:
        epochs: epochs of the training set.
        samples: training examples (the first ``samples`` of the training set: the same model and batch, fewer
            steps per epoch); None: all of them.
        data: where the data may come from (``bench.models.datasets.DATA_CHOICES``; ``auto``: real, and synthetic only
            at smoke size); recorded as ``data.requested``.
    """

    kind: Literal["epochs"] = "epochs"
    epochs: PositiveInt
    samples: PositiveInt | None = None
    data: str = "auto"


class StepInputs(Inputs):
    """The inputs of a step-timed cell (the ``steps`` scenario: the paper suite).

    Attributes:
        steps: timed steps after the first.
        seq_len: the sequence length of a task whose inputs have one (``PaperModel.reads_seq_len``: its model's
            own, or the one asked for, then named); None for a task that has none (the image models; a causal
            LM's generate, a fixed prompt to ``max_length``), whose cell neither names nor takes one given
            (``bench.run.scenarios.steps.Steps.inputs``), and a selection of such tasks alone is a plan error.
    """

    kind: Literal["steps"] = "steps"
    steps: PositiveInt
    seq_len: PositiveInt | None = None


#: Any kind of inputs, as a cell holds them (told apart by ``kind`` in the worker's input file).
AnyInputs = EpochInputs | StepInputs
I = TypeVar("I", bound=Inputs)  # noqa: E741


class Cell(BaseModel):
    """One unit of work: a workload's task on a stack, at a size, with a set of settings and its resolved inputs.

    Attributes:
        stack: stack id. suite: suite name. workload: workload name. task: e.g. ``fit``.
        size: ``smoke`` (tiny, CI) or ``full`` (published sizes).
        device: ``cpu`` or ``gpu`` (already resolved, never ``auto``).
        variant: name of the settings set; ``default`` is the stack's out-of-the-box configuration.
        settings: knob overrides for this variant (e.g. ``{"jit_compile": True}``).
        inputs: the scenario's measurement inputs, resolved (``EpochInputs``, ``StepInputs``); None only for a cell
            made to name a record (the worker refuses to run one).
        timeout_s: wall-clock limit for the cell's process (s); not given: the size's
            (``bench.core.request.timeout_for``).
        baseline: this variant is the stack's out-of-the-box configuration in a sweep.
        repeat: 1-based index of an independent repeat (None when the cell is not repeated).
        telemetry_samples: also write the raw GPU telemetry samples to ``<run_id>.telemetry.csv``.
        schedule: where this repeat ran in ``make bench-all``'s rounds (``bench.core.rounds.schedule``: seed,
            round, rounds, the round's stack order, position), None outside rounds.
        profile: after the timed measurement, profile a few steady steps (``bench.instruments.profile``; repeat 1 only).
            Not in the id: the profile runs after the timed window and the telemetry have closed, so a profiled
            record's timed numbers are the same measurement as an unprofiled one's (tests/run/test_profile_run.py).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    stack: str
    suite: str
    workload: str
    task: str
    size: str
    device: str
    variant: str = "default"
    settings: dict[str, Any] = Field(default_factory=dict)
    inputs: Annotated[AnyInputs, Field(discriminator="kind")] | None = None
    timeout_s: float = Field(default=None, validate_default=True)  # None: resolved by _size_default
    baseline: bool = False
    repeat: int | None = None
    telemetry_samples: bool = False
    schedule: dict[str, Any] | None = None
    profile: bool = False

    @field_validator("timeout_s", mode="before")
    @classmethod
    def _size_default(cls, value: float | None, info: ValidationInfo) -> float:
        # the one per-size default (``bench.core.request.timeout_for``), for a cell made without a limit
        return timeout_for(info.data.get("size", ""), value) if value is None else value

    @property
    def id(self) -> str:
        """The cell's identity across repeats (also its final record's file name):
        ``stack__suite__workload__task__size__variant``, then ``__`` and ``key=value`` joined by ``+`` for each
        measurement input set off its default (``changed_inputs``), e.g.
        ``pytorch__classic__mnist_mlp__fit__smoke__default__batch_size=64+epochs=5``. A cell with every input at
        its default keeps the plain id, so results written before the suffix existed keep their names."""
        base = "__".join((self.stack, self.suite, self.workload, self.task, self.size, self.variant))
        suffix = "+".join(f"{k}={v}" for k, v in self.changed_inputs().items())
        return f"{base}__{suffix}" if suffix else base

    def changed_inputs(self) -> dict[str, Any]:
        """The measurement inputs set off their default (``Inputs.named``), in the order of their fields. A step-timed
        cell's batch size is left out when its variant already names it (``bs<N>``, ``bs<N>-<...>``:
        ``bench.run.plan``)."""
        given = self.inputs
        if given is None:
            return {}
        out = {k: getattr(given, k) for k in type(given).model_fields if k in given.named}
        if "batch_size" in out and self.variant.split("-")[0] == f"bs{given.batch_size}":
            del out["batch_size"]
        return out

    def inputs_as(self, kind: type[I]) -> I:
        """``inputs`` as ``kind`` (``EpochInputs``, ``StepInputs``): what a scenario and its engines read.

        Raises:
            TypeError: the cell holds no inputs, or another kind.
        """
        if not isinstance(self.inputs, kind):
            raise TypeError(f"cell {self.id} holds {type(self.inputs).__name__} inputs, not {kind.__name__}")
        return self.inputs

    @property
    def run_id(self) -> str:
        """``id``, with ``__r<k>`` for repeat k of a repeated cell."""
        return self.id if self.repeat is None else f"{self.id}__r{self.repeat}"

    def replace(self, **changes: Any) -> Cell:
        """A copy with ``changes`` (field -> value), validated as a new cell."""
        return Cell.model_validate({**self.model_dump(), **changes})

    def to_dict(self) -> dict[str, Any]:
        """Every field, as JSON-ready values (the worker's input file)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        """The cell ``to_dict`` wrote.

        Raises:
            pydantic.ValidationError: ``data`` is not a cell.
        """
        return cls.model_validate(data)


def inputs_of(cell_id: str) -> str:
    """The input suffix of a cell id (``Cell.id``): ``"batch_size=64+epochs=5"`` for
    ``pytorch__classic__mnist_mlp__fit__smoke__default__batch_size=64+epochs=5``, ``""`` for a cell run with every
    input at its default. Reports and ``bench compare`` key rows on it beside the variant, so a cell measured with
    other inputs is never merged with (or picked for) the default one."""
    parts = str(cell_id).split("__")
    return "__".join(parts[6:]) if len(parts) > 6 else ""
