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
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from bench.core.stacks import Stack
from bench.instruments.profile.rerun import ProfileRun
from bench.instruments.telemetry import sampler
from bench.models.workloads import SUITES, WORKLOADS
from bench.results import derived
from bench.results.cell import Cell
from bench.results.schema import EffectiveSettings, Record, Telemetry


class Scenario(ABC):
    """One kind of work. Subclasses are stateless singletons, registered in ``SCENARIOS``.

    Attributes:
        name: ``epochs`` or ``steps``, also the settings kind its engines take (``bench.core.knobs.settings_class``).
        suites_text: the suites it runs, as a plan error names them.
        overrides: the plan overrides (``bench run`` options) its workloads read, of ``OVERRIDES``.
    """

    name: ClassVar[str]
    suites_text: ClassVar[str]
    overrides: ClassVar[frozenset[str]]

    @abstractmethod
    def owns(self, w: Any) -> bool:
        """Whether ``w`` (a registered workload) is this scenario's kind."""

    @abstractmethod
    def default_batch(self, w: Any, task: str, size: str) -> int:
        """The batch size (examples per step) of a cell of ``w``'s ``task`` at ``size`` that names none."""

    @abstractmethod
    def batches(self, w: Any, task: str, size: str, batch_size: int | None,
                variant: str) -> list[tuple[int | None, str]]:
        """(batch size, variant) of each cell of ``task``; a batch size of None is the workload's default."""

    @abstractmethod
    def batch_override(self, w: Any, size: str, batch_size: int | None) -> int | None:
        """``batch_size`` as a sweep cell records it (None where it is the workload's own at ``size``)."""

    def sync_problem(self, sync: str, suite: str) -> str | None:
        """Why the timing cadence ``sync`` (a valid one) cannot time this scenario's ``suite`` (None: it can)."""
        return None

    def data_problem(self, data: str, suite: str) -> str | None:
        """Why the data source ``data`` (a valid one) does not apply to this scenario's ``suite`` (None: it does)."""
        return None

    def override_problem(self, suite: str, **overrides: int | None) -> str | None:
        """Why an override given (not None) is one ``suite``'s workloads never read (``epochs`` and ``samples`` in the
        paper suite, ``steps`` and ``seq_len`` in the fit suites; None when all apply), rather than run a cell whose id
        names an input it ignored."""
        for name, value in overrides.items():
            if value is not None and name not in self.overrides:
                where = next(s.suites_text for s in SCENARIOS if name in s.overrides)
                return f"--{name.replace('_', '-')} applies to {where}, not to suite {suite!r}"
        return None

    @abstractmethod
    def unsupported(self, w: Any, stack: Stack) -> str | None:
        """Why ``stack`` cannot run ``w``'s model (None when it can): the cell is recorded unsupported with it."""

    @abstractmethod
    def run(self, rec: Record, cell: Cell, stack: Stack, w: Any, samples_csv: Path | None) -> ProfileRun | None:
        """The worker's body for ``cell``: run it and fill ``rec``'s data, settings, metrics, model, memory and
        telemetry blocks (``rec.batch_size`` is set). ``samples_csv``: where the raw telemetry samples go
        (None: not written). Returns the engine's steps for a profile (``bench.instruments.profile.rerun.ProfileRun``),
        which the worker runs after this returned (the timed window and the telemetry closed), None without.

        Raises:
            bench.models.engines.Unsupported: the settings cannot run on this stack or in this image; anything else
            the cell's engine raised (the worker records it).
        """

    @abstractmethod
    def resume_expected(self, rec: Record, cell: Cell, w: Any) -> list[tuple[str, Any, Any]]:
        """(name, recorded, expected) of the inputs a record written before its id named them recorded as they
        took effect (batch size, and the epochs or timed steps of an ok record): ``runfolder.input_mismatch``."""

    @abstractmethod
    def describe(self, w: Any) -> str:
        """``w``'s line of ``bench list`` (after its name)."""


#: The plan overrides a scenario may read (``Scenario.overrides``).
OVERRIDES = ("epochs", "samples", "steps", "seq_len")


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
