"""Scenarios: what kind of work a workload is, as plug-ins: what differs between kinds of work, one module each.

A scenario owns everything that differs between its workloads and the others': how its cells expand (batch sizes,
variants) and which plan inputs apply to it, the worker's body for one of its cells, its part of a resumed run's
input check, and the settings kind its knobs are checked against. ``epochs.py`` fits a model on a dataset for some
epochs (the ``classic`` and ``tuning`` suites, ``Workload``); ``steps.py`` times steps on random inputs of the
published shapes (the ``paper`` suite, ``StepWorkload``). ``scenario_of`` is the one place that tells them apart;
no module outside this package asks which kind of workload it holds (``tests/run/scenarios/test_scenarios.py`` checks).
"""

from __future__ import annotations

import contextlib
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from bench.core.stacks import Stack
from bench.instruments.profile.rerun import ProfileRun
from bench.instruments.telemetry import sampler
from bench.models.workloads import SUITES, WORKLOADS
from bench.results import derived
from bench.results.cell import AnyInputs, Cell, EpochInputs, StepInputs
from bench.results.schema import EffectiveSettings, Record, Telemetry


class Scenario(ABC):
    """One kind of work. Subclasses are stateless singletons, registered in ``SCENARIOS``.

    Attributes:
        name: ``epochs`` or ``steps``, also the settings kind its engines take (``bench.core.knobs.settings_class``).
        label: what its suites are called together (``epoch``: the epoch suites), in ``suites_text``.
        inputs_class: its cells' inputs (``bench.results.cell.EpochInputs``, ``StepInputs``): what the plan
            resolves, the worker's input file carries and its engines read.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    inputs_class: ClassVar[type[EpochInputs] | type[StepInputs]]

    @abstractmethod
    def owns(self, w: Any) -> bool:
        """Whether ``w`` (a registered workload) is this scenario's kind."""

    def suites(self) -> tuple[str, ...]:
        """The suites (``SUITES``' keys, in its order) whose workloads are this scenario's (``suite_scenario``)."""
        return tuple(s for s in SUITES if suite_scenario(s) is self)

    @property
    def suites_text(self) -> str:
        """The suites it runs, as help texts and errors name them: ``the paper suite`` (one), ``the epoch suites
        (classic, tuning)`` (several: ``label``), from the workload registry (``suites``)."""
        names = self.suites()
        return f"the {names[0]} suite" if len(names) == 1 else f"the {self.label} suites ({', '.join(names)})"

    @classmethod
    def input_names(cls) -> tuple[str, ...]:
        """The plan inputs (``bench run`` options of the same name) this scenario's cells take: its
        ``inputs_class``' fields."""
        return tuple(n for n in cls.inputs_class.model_fields if n not in ("kind", "named"))

    @abstractmethod
    def defaults(self, w: Any, task: str, size: str) -> dict[str, Any]:
        """The inputs ``w`` publishes for ``task`` at ``size`` (batch size, epochs, steps...): each one's default,
        resolved here alone (an input without an entry takes its ``inputs_class`` default)."""

    def same_as_default(self, w: Any, size: str, name: str, value: Any, default: Any) -> bool:
        """Whether input ``name`` given as ``value`` makes the same cell as its ``default`` (then the id does not
        name it)."""
        return bool(value == default)

    def inputs(self, w: Any, task: str, size: str, given: Mapping[str, Any]) -> AnyInputs:
        """The resolved inputs of a cell of ``w``'s ``task`` at ``size``: each of ``input_names`` as ``given``
        (None: not given) where that is not the default (``same_as_default``; it is then ``named``), else its
        default (``defaults``).

        Raises:
            pydantic.ValidationError: a value the inputs refuse (a number below 1).
        """
        own = self.defaults(w, task, size)
        values: dict[str, Any] = {}
        named: list[str] = []
        for name in self.input_names():
            default = own.get(name, self.inputs_class.model_fields[name].default)
            value = given.get(name)
            if value is None or self.same_as_default(w, size, name, value, default):
                values[name] = default
            else:
                values[name] = value
                named.append(name)
        return self.inputs_class(**values, named=tuple(named))

    @abstractmethod
    def cells(self, w: Any, task: str, size: str, given: Mapping[str, Any],
              variant: str) -> list[tuple[AnyInputs, str]]:
        """(inputs, variant) of each cell of ``task`` (``inputs``)."""

    def sync_problem(self, sync: str, suite: str) -> str | None:
        """Why the timing cadence ``sync`` (a valid one) cannot time this scenario's ``suite`` (None: it can)."""
        return None

    def data_problem(self, data: str, suite: str) -> str | None:
        """Why the data source ``data`` (a valid one) does not apply to this scenario's ``suite`` (None: it does)."""
        return None

    def override_problem(self, suite: str, given: Mapping[str, Any]) -> str | None:
        """Why an input given (not None, not its declared default) is one ``suite``'s workloads never read
        (``epochs`` and ``samples`` in the paper suite, ``steps`` and ``seq_len`` in the epoch suites; None when all
        apply), rather than run a cell whose id names an input it ignored."""
        mine = self.input_names()
        for name, value in given.items():
            if value is None or name in mine:
                continue
            owner = next((s for s in SCENARIOS if name in s.input_names()), None)
            if owner is not None and value != owner.inputs_class.model_fields[name].default:
                return f"--{name.replace('_', '-')} applies to {owner.suites_text}, not to suite {suite!r}"
        return None

    def selection_problem(self, selected: Sequence[tuple[Any, str]], given: Mapping[str, Any],
                          size: str) -> str | None:
        """Why an input given (not None) applies to none of the ``selected`` (workload, task) pairs of this
        scenario's suite at ``size``, or is out of a selected model's range there (None: it applies): a run of it
        would only plan cells that ignore it, or that fail."""
        return None

    @abstractmethod
    def unsupported(self, w: Any, stack: Stack) -> str | None:
        """Why ``stack`` cannot run ``w``'s model (None when it can): the cell is recorded unsupported with it."""

    @abstractmethod
    def run(self, rec: Record, cell: Cell, stack: Stack, w: Any, samples_csv: Path | None) -> ProfileRun | None:
        """The worker's body for ``cell``: run it (the engine takes ``cell`` whole, its inputs resolved) and fill
        ``rec``'s data, settings, metrics, model, memory and telemetry blocks. ``samples_csv``: where the raw
        telemetry samples go (None: not written). Returns the engine's steps for a profile
        (``bench.instruments.profile.rerun.ProfileRun``), which the worker runs after this returned (the timed window
        and the telemetry closed), None without.

        Raises:
            bench.models.engines.Unsupported: the settings cannot run on this stack or in this image; anything else
            the cell's engine raised (the worker records it).
        """

    @abstractmethod
    def resume_expected(self, rec: Record, cell: Cell) -> list[tuple[str, Any, Any]]:
        """(name, recorded, expected) of the inputs of this scenario a record written before its id named them
        recorded as they took effect (the epochs or timed steps of an ok record...), beside the batch size
        ``runfolder.input_mismatch`` checks: ``cell``'s resolved inputs are the expected values."""

    @abstractmethod
    def describe(self, w: Any) -> str:
        """``w``'s line of ``bench list`` (after its name)."""


def scenario_of(w: Any) -> Scenario:
    """The scenario ``w`` (a registered workload) belongs to.

    Raises:
        ValueError: no scenario, or more than one, owns ``w``.
    """
    owners = [s for s in SCENARIOS if s.owns(w)]
    if len(owners) != 1:
        raise ValueError(f"{getattr(w, 'name', w)!r} belongs to {len(owners)} scenarios, not one")
    return owners[0]


def suite_scenario(suite: str) -> Scenario:
    """The scenario of every workload of ``suite`` (a key of ``SUITES``).

    Raises:
        ValueError: the suite's workloads belong to different scenarios (its cells could not share one plan).
    """
    found = {scenario_of(WORKLOADS[name]).name: scenario_of(WORKLOADS[name]) for name in SUITES[suite]}
    if len(found) != 1:
        raise ValueError(f"suite {suite!r} mixes scenarios {', '.join(sorted(found))}")
    return next(iter(found.values()))


@contextlib.contextmanager
def telemetry_window(device: str, samples_csv: Path | None) -> Iterator[Any]:
    """The cell's telemetry (``sampler.for_device``), its idle power measured before the engine starts; the engine
    closes the window (``Telemetry.stop``) right after its last barrier. The raw samples go to ``samples_csv`` (None:
    not written) once the engine is done, whatever it raised."""
    tel = sampler.for_device(device)
    tel.measure_idle()
    try:
        yield tel
    finally:
        if samples_csv is not None:
            tel.write_samples(samples_csv)


def add_energy_metrics(rec: Record) -> None:
    """The energy figures in ``metrics``: J/step, J/epoch and above idle as the telemetry measured them, and
    examples/J derived from J/epoch (``derived.energy_rates``, the formula the aggregation of repeats uses; None
    without NVML)."""
    t = rec.telemetry
    m = rec.metrics
    m.j_per_step, m.j_per_epoch, m.j_per_step_above_idle = t.j_per_step, t.j_per_epoch, t.j_per_step_above_idle
    derived.energy_rates(rec.metrics, derived.examples_per_epoch(rec))


def finish_telemetry(rec: Record, summary: dict[str, Any]) -> None:
    """``rec``'s telemetry block from the sampler's ``summary``, the energy metrics it gives, and a note when the
    GPU throttled in the timed window."""
    rec.telemetry = Telemetry.model_validate(summary)
    add_energy_metrics(rec)
    if rec.telemetry.throttled:
        rec.notes.append("GPU throttled during the timed window: " + ", ".join(rec.telemetry.throttle_reasons or []))


def effective_settings(knob_values: Any, engine_block: EffectiveSettings, **more: Any) -> EffectiveSettings:
    """The record's ``settings`` block: every knob (``knob_values``, the settings dataclass the engine ran with),
    then what took effect (the engine's block: the fields it gave, over the knobs' values), then ``more``.

    Raises:
        TypeError: a key of ``more`` the block does not declare.
    """
    return EffectiveSettings(**{**dataclasses.asdict(knob_values), **engine_block.model_dump(exclude_unset=True),
                                **more})


def _registered() -> tuple[Scenario, ...]:
    # the scenario modules import this one (the base class), so they are imported once it is defined
    from bench.run.scenarios.epochs import EPOCHS
    from bench.run.scenarios.steps import STEPS

    return EPOCHS, STEPS


#: Every scenario, the one registry.
SCENARIOS: tuple[Scenario, ...] = _registered()
#: Every plan input a scenario takes (``Scenario.input_names``): the ``bench run`` options of these names reach
#: the plan (``bench.run.session``).
INPUT_NAMES: tuple[str, ...] = tuple(dict.fromkeys(n for s in SCENARIOS for n in s.input_names()))
