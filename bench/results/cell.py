"""The cell: one unit of work (a workload's task on a stack, at a size, with its inputs) and its identity."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: The measurement inputs a cell's id names when they differ from their default (field -> default), beside the
#: variant (which already names the knobs and the timing cadence): each changes what is measured, so a cell run
#: with another value is another record, never a resumed one.
ID_INPUTS: dict[str, Any] = {"batch_size": None, "epochs": None, "samples": None, "steps": None, "seq_len": None,
                             "data": "auto"}


@dataclass(frozen=True)
class Cell:
    """One unit of work: a workload's task on a stack, at a size, with a set of settings.

    Attributes:
        stack: stack id. suite: suite name. workload: workload name. task: e.g. ``fit``.
        size: ``smoke`` (tiny, CI) or ``full`` (published sizes).
        device: ``cpu`` or ``gpu`` (already resolved, never ``auto``).
        variant: name of the settings set; ``default`` is the stack's out-of-the-box configuration.
        settings: knob overrides for this variant (e.g. ``{"jit_compile": True}``).
        batch_size / epochs: overrides of the workload's defaults (None keeps them).
        samples: training examples of a fit cell, an override of the workload's at ``size`` (None keeps them):
            the first ``samples`` of the training set, the same model and batch, fewer steps per epoch.
        timeout_s: wall-clock limit for the cell's process (s).
        baseline: this variant is the stack's out-of-the-box configuration in a sweep.
        repeat: 1-based index of an independent repeat (None when the cell is not repeated).
        telemetry_samples: also write the raw GPU telemetry samples to ``<run_id>.telemetry.csv``.
        steps / seq_len: overrides of a step-timed workload's timed steps and sequence length (None keeps
            the published values).
        data: where a fit cell's data may come from (``bench.models.datasets.DATA_CHOICES``; ``auto``: real, and
            synthetic only at smoke size).
        schedule: where this repeat ran in ``make bench-all``'s rounds (``bench.core.rounds.schedule``: seed,
            round, rounds, the round's stack order, position), None outside rounds.
        profile: after the timed measurement, profile a few steady steps (``bench.instruments.profile``; repeat 1 only).
            Not in the id: the profile runs after the timed window and the telemetry have closed, so a profiled
            record's timed numbers are the same measurement as an unprofiled one's (tests/run/test_profile_run.py).
    """

    stack: str
    suite: str
    workload: str
    task: str
    size: str
    device: str
    variant: str = "default"
    settings: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    batch_size: int | None = None
    epochs: int | None = None
    timeout_s: float = 600.0
    baseline: bool = False
    repeat: int | None = None
    telemetry_samples: bool = False
    steps: int | None = None
    seq_len: int | None = None
    schedule: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    data: str = "auto"
    samples: int | None = None
    profile: bool = False

    @property
    def id(self) -> str:
        """The cell's identity across repeats (also its final record's file name):
        ``stack__suite__workload__task__size__variant``, then ``__`` and ``key=value`` joined by ``+`` for each
        measurement input that differs from its default (``ID_INPUTS``), e.g.
        ``pytorch__classic__mnist_mlp__fit__smoke__default__batch_size=64+epochs=5``. A cell with every input at
        its default keeps the plain id, so results written before the suffix existed keep their names."""
        base = "__".join((self.stack, self.suite, self.workload, self.task, self.size, self.variant))
        suffix = "+".join(f"{k}={v}" for k, v in self.changed_inputs().items())
        return f"{base}__{suffix}" if suffix else base

    def changed_inputs(self) -> dict[str, Any]:
        """The measurement inputs (``ID_INPUTS``) that differ from their default, in ``ID_INPUTS`` order. A
        step-timed cell's batch size is left out when its variant already names it (``bs<N>``, ``bs<N>-<...>``:
        ``bench.run.plan``)."""
        out = {k: getattr(self, k) for k, default in ID_INPUTS.items() if getattr(self, k) != default}
        if "batch_size" in out and self.variant.split("-")[0] == f"bs{self.batch_size}":
            del out["batch_size"]
        return out

    @property
    def run_id(self) -> str:
        """``id``, with ``__r<k>`` for repeat k of a repeated cell."""
        return self.id if self.repeat is None else f"{self.id}__r{self.repeat}"

    def to_dict(self) -> dict[str, Any]:
        """Every field, as JSON-ready values (the worker's input file)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        """The cell ``to_dict`` wrote."""
        return cls(**data)


def inputs_of(cell_id: str) -> str:
    """The input suffix of a cell id (``Cell.id``): ``"batch_size=64+epochs=5"`` for
    ``pytorch__classic__mnist_mlp__fit__smoke__default__batch_size=64+epochs=5``, ``""`` for a cell run with every
    input at its default. Reports and ``bench compare`` key rows on it beside the variant, so a cell measured with
    other inputs is never merged with (or picked for) the default one."""
    parts = str(cell_id).split("__")
    return "__".join(parts[6:]) if len(parts) > 6 else ""
