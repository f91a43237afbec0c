"""Turns a selection (stacks x suite x workloads x tasks, at a size, on a device) into cells."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from pydantic import TypeAdapter, ValidationError

from bench.core.cadence import Cadence
from bench.core.families.keras import KerasEpochSettings
from bench.core.request import VARIANT_INPUTS, Request, cli_flag, grid_refusal, timeout_for
from bench.core.stacks import STACKS
from bench.models.datasets import DATA_CHOICES
from bench.models.workloads import SIZES, SUITES, WORKLOADS
from bench.results.cell import Cell, EpochInputs, StepInputs
from bench.run import sweep
from bench.run.scenarios import INPUT_NAMES, Scenario, scenario_of, suite_scenario


class PlanError(ValueError):
    """A selection that names something unknown or selects nothing."""


def _check(kind: str, value: str, known: Sequence[str]) -> None:
    if value not in known:
        raise PlanError(f"unknown {kind} {value!r}; known: {', '.join(known)}")


def all_tasks() -> list[str]:
    return sorted({t for w in WORKLOADS.values() for t in w.tasks})


#: The cell's own run options a plan takes as they are (``Cell`` fields; ``timeout_s`` resolved by ``timeout_for``).
RUN_OPTIONS = ("timeout_s", "telemetry_samples", "profile")
#: Every keyword input ``expand`` and ``sweep_cells`` take beside the selection (``bench.run.session`` passes the
#: ``bench run`` options of these names): the scenarios' inputs (``INPUT_NAMES``) and the run options.
PLAN_INPUTS = (*INPUT_NAMES, *RUN_OPTIONS)
#: Each scenario input's type as its inputs model declares it (``EpochInputs``, ``StepInputs``), which a value given
#: to the plan must meet (a batch size of 2.5 is one line, not a traceback from the cell's model).
INPUT_FIELDS: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(field.rebuild_annotation())
    for cls in (EpochInputs, StepInputs) for name, field in cls.model_fields.items() if name in INPUT_NAMES}


def expand(stacks: Sequence[str], suite: str, size: str, device: str,
           workloads: Sequence[str] = (), tasks: Sequence[str] = (), *,
           variant: str = "default", settings: dict[str, Any] | None = None, sync: str | None = None,
           **given: Any) -> list[Cell]:
    """All cells of the selection, in a stable order (stack, then workload, then task; a suite with a
    default grid, like ``tuning``, gives one cell per stack and variant of that grid), each once: a stack or workload
    named twice counts at its first mention. A step-timed
    workload (the ``paper`` suite) gives one cell per published batch size of a task, variant ``bs<N>``.

    ``given``: the scenarios' inputs (``INPUT_NAMES``: ``batch_size``, ``epochs``, ``samples``, ``data``,
    ``steps``, ``seq_len``; None: the workload's own at ``size``), each resolved once here into the cell's
    ``inputs`` by the suite's scenario (``Scenario.inputs``), and the run options (``RUN_OPTIONS``: ``timeout_s``,
    ``telemetry_samples``, ``profile``, ``Cell``'s fields of those names).
    ``sync``: the timing cadence of every cell of an epoch suite (``bench.instruments.timing.Cadence``; None: the
    settings' default, ``epoch``); a cadence other than the default is added to the variant name
    (``sync-step``, ``sync-every8``) so its records sit beside the default ones.

    Raises:
        PlanError: unknown stack/suite/workload/task/size/device or input, a workload outside the suite, a number
            below 1, an input the suite's scenario does not take or that none of the selected workloads' tasks
            reads (``Scenario.selection_problem``: a ``seq_len`` for the image models alone), a ``sync`` that is
            not a cadence or is given to the step-timed paper suite, ``settings`` or a ``variant`` for a suite that
            runs its own grid (``tuning``: they were dropped, unsaid), or an empty selection.
    """
    # a name given twice (WORKLOADS="a a", --workload a --workload a) selects it once, first mention first, as
    # bench run's --stack and the tasks (a filter) do: its cells came twice, each run twice into one record
    stacks, workloads = list(dict.fromkeys(stacks)), list(dict.fromkeys(workloads))
    _check_selection(stacks, suite, size, device, workloads, tasks, given, sync=sync)
    if suite in sweep.DEFAULT_GRIDS:
        if settings or variant != "default":
            flags = [cli_flag(f) for f in fields(Request) if f.name in VARIANT_INPUTS]
            raise PlanError(grid_refusal(suite, f"{', '.join(flags[:-1])} and {flags[-1]}", "--variant"))
        cells = [c for c in sweep_cells(sweep.default_grid(suite), stacks, suite=suite, size=size, device=device,
                                        **given)
                 if (not workloads or c.workload in workloads) and (not tasks or c.task in tasks)]
    else:
        cells = [
            Cell(stack=s, suite=suite, workload=w, task=t, size=size, device=device, variant=v,
                 settings=dict(settings or {}), inputs=inputs, **_run_options(given, size))
            for s in stacks
            for w in (workloads or SUITES[suite])
            for t in WORKLOADS[w].tasks
            if not tasks or t in tasks
            for inputs, v in scenario_of(WORKLOADS[w]).cells(WORKLOADS[w], t, size, given, variant)
        ]
    if not cells:
        raise PlanError("the selection contains no cell")
    if sync is not None and sync != KerasEpochSettings.sync:
        tag = "sync-" + sync.replace(":", "")
        cells = [c.replace(settings={**c.settings, "sync": sync},
                           variant=tag if c.variant == "default" else f"{c.variant}+{tag}") for c in cells]
    return cells


def _run_options(given: Mapping[str, Any], size: str) -> dict[str, Any]:
    """The ``Cell`` fields of the run options ``given`` (``RUN_OPTIONS``), the time limit resolved at ``size``
    (``bench.core.request.timeout_for``)."""
    out = {k: given[k] for k in RUN_OPTIONS if given.get(k) is not None}
    out["timeout_s"] = timeout_for(size, out.get("timeout_s"))
    return out


def only_variants(cells: Sequence[Cell], variants: Sequence[str], known: Sequence[Cell] | None = None) -> list[Cell]:
    """The cells of ``cells`` whose variant is one of ``variants`` (all of them when ``variants`` is empty), in order.

    ``known``: the cells whose variants are valid names (default ``cells``): the same selection on every stack, so
    that one list serves a run of several stacks, each running the names it has (``make bench-all`` runs one stack
    per container; a stack without any of them runs nothing).

    Raises:
        PlanError: a name in ``variants`` that no cell of ``known`` has (a typo would otherwise drop cells
            silently); the message lists the variants of ``cells``.
    """
    if not variants:
        return list(cells)
    here = sorted({c.variant for c in cells})
    valid = set(here) if known is None else {c.variant for c in known}
    for v in variants:
        if v not in valid:
            raise PlanError(f"no cell of the selection has variant {v!r}; its variants here: {', '.join(here)}")
    return [c for c in cells if c.variant in variants]


def _check_selection(stacks: Sequence[str], suite: str, size: str, device: str, workloads: Sequence[str],
                     tasks: Sequence[str], given: Mapping[str, Any], *, sync: str | None) -> None:
    """Check that every name and number of ``expand``'s selection is known and applies to the suite's scenario.

    Raises:
        PlanError: as ``expand`` says.
    """
    for s in stacks:
        _check("stack", s, list(STACKS))
    _check("suite", suite, list(SUITES))
    _check("size", size, SIZES)
    _check("device", device, ("cpu", "gpu"))
    for w in workloads:
        _check("workload", w, list(WORKLOADS))
        if w not in SUITES[suite]:
            raise PlanError(f"workload {w!r} is not in suite {suite!r}; it has: {', '.join(SUITES[suite])}")
    for t in tasks:
        _check("task", t, all_tasks())
    _check_given(given)
    scenario = suite_scenario(suite)
    if sync is not None:
        _check_sync(sync, scenario, suite)
    if given.get("data") is not None:
        _raise_if(scenario.data_problem(given["data"], suite))
    _raise_if(scenario.override_problem(suite, given))
    selected = [(WORKLOADS[w], t) for w in (workloads or SUITES[suite]) for t in WORKLOADS[w].tasks
                if not tasks or t in tasks]
    if selected:  # none: "the selection contains no cell" says it
        _raise_if(scenario.selection_problem(selected, given, size))


def _check_given(given: Mapping[str, Any]) -> None:
    """Raise PlanError for an input ``expand`` does not take (``PLAN_INPUTS``), a number below 1 or a data source
    that is not one of ``DATA_CHOICES``."""
    for name, value in given.items():
        _check("input", name, PLAN_INPUTS)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            raise PlanError(f"{name.removesuffix('_s').replace('_', ' ')} must be positive, got {value}")
        if name in INPUT_FIELDS and value is not None:
            try:
                INPUT_FIELDS[name].validate_python(value)
            except ValidationError as e:
                raise PlanError(f"{name.replace('_', ' ')} {value!r}: {e.errors()[0]['msg']}") from None
    if given.get("data") is not None:
        _check("data source", given["data"], DATA_CHOICES)


def _raise_if(problem: str | None) -> None:
    if problem:
        raise PlanError(problem)


def _check_sync(sync: str, scenario: Scenario, suite: str) -> None:
    if not Cadence.accepts(sync):
        raise PlanError(f"--sync {sync!r} is not valid; expected {Cadence.SYNTAX}")
    _raise_if(scenario.sync_problem(sync, suite))


def sweep_cells(grid, stacks: Sequence[str], *, suite: str | None = None, size: str, device: str,
                **given: Any) -> list[Cell]:
    """One cell per (stack, variant) of a ``bench.run.sweep.Grid``, baseline first within each stack; ``given``:
    the inputs and run options, as ``expand``'s (resolved by the workload's scenario, ``Scenario.inputs``).

    Raises:
        PlanError: an unknown stack or input, a number below 1, the grid's workload or task is unknown, it has no
            variant for any selected stack, or ``data`` is not one of ``DATA_CHOICES``.
    """
    for s in stacks:
        _check("stack", s, list(STACKS))
    _check_given(given)
    _check("workload", grid.workload, list(WORKLOADS))
    if grid.task not in WORKLOADS[grid.workload].tasks:
        raise PlanError(f"workload {grid.workload!r} has no task {grid.task!r}")
    w = WORKLOADS[grid.workload]
    _raise_if(scenario_of(w).selection_problem([(w, grid.task)], given, size))
    inputs = scenario_of(w).inputs(w, grid.task, size, given)
    cells = [
        Cell(stack=s, suite=suite or grid.name, workload=grid.workload, task=grid.task, size=size,
             device=device, variant=v.name, settings=v.settings, baseline=v.baseline, inputs=inputs,
             **_run_options(given, size))
        for s in stacks
        for v in grid.variants(s)
    ]
    if not cells:
        raise PlanError(f"grid {grid.source} has no variant for stacks {', '.join(stacks)}")
    return cells
