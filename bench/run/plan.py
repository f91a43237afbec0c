"""Turns a selection (stacks x suite x workloads x tasks, at a size, on a device) into cells."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from bench.core.cadence import Cadence
from bench.core.families.keras import KerasEpochSettings
from bench.core.request import TIMEOUT_S
from bench.core.stacks import STACKS
from bench.models.datasets import DATA_CHOICES
from bench.models.workloads import SIZES, SUITES, WORKLOADS
from bench.results.cell import Cell
from bench.run import sweep
from bench.run.scenarios import Scenario, scenario_of, suite_scenario


class PlanError(ValueError):
    """A selection that names something unknown or selects nothing."""


def _check(kind: str, value: str, known: Sequence[str]) -> None:
    if value not in known:
        raise PlanError(f"unknown {kind} {value!r}; known: {', '.join(known)}")


def all_tasks() -> list[str]:
    return sorted({t for w in WORKLOADS.values() for t in w.tasks})


def expand(stacks: Sequence[str], suite: str, size: str, device: str,
           workloads: Sequence[str] = (), tasks: Sequence[str] = (), *,
           variant: str = "default", settings: dict[str, Any] | None = None,
           batch_size: int | None = None, epochs: int | None = None, samples: int | None = None,
           timeout_s: float | None = None, telemetry_samples: bool = False, steps: int | None = None,
           seq_len: int | None = None, sync: str | None = None, data: str = "auto",
           profile: bool = False) -> list[Cell]:
    """All cells of the selection, in a stable order (stack, then workload, then task; a suite with a
    default grid, like ``tuning``, gives one cell per stack and variant of that grid). A step-timed
    workload (the ``paper`` suite) gives one cell per published batch size of a task, variant ``bs<N>``.

    ``data``: where the fit suites' data may come from (``bench.models.datasets.DATA_CHOICES``); the paper suite
    times random inputs and takes only ``auto``.
    ``profile``: profile every cell after its timed measurement (``Cell.profile``).
    ``sync``: the timing cadence of every cell of a fit suite (``bench.instruments.timing.Cadence``; None: the
    settings' default, ``epoch``); a cadence other than the default is added to the variant name
    (``sync-step``, ``sync-every8``) so its records sit beside the default ones.

    Raises:
        PlanError: unknown stack/suite/workload/task/size/device, a workload outside the suite, a
            ``sync`` that is not a cadence or is given to the step-timed paper suite, or an empty
            selection.
    """
    _check_selection(stacks, suite, size, device, workloads, tasks, batch_size=batch_size, epochs=epochs,
                     samples=samples, timeout_s=timeout_s, steps=steps, seq_len=seq_len, sync=sync, data=data)
    if suite in sweep.DEFAULT_GRIDS:
        cells = [c for c in sweep_cells(sweep.default_grid(suite), stacks, suite=suite, size=size, device=device,
                                        batch_size=batch_size, epochs=epochs, samples=samples,
                                        timeout_s=timeout_s, telemetry_samples=telemetry_samples, data=data,
                                        profile=profile)
                 if (not workloads or c.workload in workloads) and (not tasks or c.task in tasks)]
    else:
        cells = [
            Cell(stack=s, suite=suite, workload=w, task=t, size=size, device=device, variant=v,
                 settings=dict(settings or {}), batch_size=b,
                 epochs=unless_default(epochs, WORKLOADS[w], "epochs", size),
                 samples=samples_unless_default(samples, WORKLOADS[w], size),
                 timeout_s=timeout_s or TIMEOUT_S[size], telemetry_samples=telemetry_samples,
                 steps=unless_default(steps, WORKLOADS[w], "steps", size),
                 seq_len=seq_len_unless_default(seq_len, WORKLOADS[w], size), data=data, profile=profile)
            for s in stacks
            for w in (workloads or SUITES[suite])
            for t in WORKLOADS[w].tasks
            if not tasks or t in tasks
            for b, v in scenario_of(WORKLOADS[w]).batches(WORKLOADS[w], t, size, batch_size, variant)
        ]
    if not cells:
        raise PlanError("the selection contains no cell")
    if sync is not None and sync != KerasEpochSettings.sync:
        tag = "sync-" + sync.replace(":", "")
        cells = [dataclasses.replace(c, settings={**c.settings, "sync": sync},
                                     variant=tag if c.variant == "default" else f"{c.variant}+{tag}") for c in cells]
    return cells


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
                     tasks: Sequence[str], *, batch_size: int | None, epochs: int | None, samples: int | None,
                     timeout_s: float | None, steps: int | None, seq_len: int | None, sync: str | None,
                     data: str) -> None:
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
    for name, value in (("batch size", batch_size), ("epochs", epochs), ("samples", samples), ("timeout", timeout_s),
                        ("steps", steps), ("sequence length", seq_len)):
        if value is not None and value <= 0:
            raise PlanError(f"{name} must be positive, got {value}")
    scenario = suite_scenario(suite)
    if sync is not None:
        _check_sync(sync, scenario, suite)
    _check("data source", data, DATA_CHOICES)
    _raise_if(scenario.data_problem(data, suite))
    _raise_if(scenario.override_problem(suite, epochs=epochs, samples=samples, steps=steps, seq_len=seq_len))


def _raise_if(problem: str | None) -> None:
    if problem:
        raise PlanError(problem)


def unless_default(value: int | None, w, name: str, size: str) -> int | None:
    """``value`` (an override of the workload's ``epochs``, ``samples`` or ``steps``), or None when it equals the
    workload's own value at ``size``: the same input as the default cell, so the same cell id and record
    (``Cell.id``)."""
    own = getattr(w, name, None)
    return None if value is not None and isinstance(own, dict) and own.get(size) == value else value


def samples_unless_default(samples: int | None, w, size: str) -> int | None:
    """``samples`` (``--samples``, a cap on a fit cell's training examples), or None when the cell it makes is the
    default cell: the workload's own count at ``size`` (``unless_default``), or, where that is the whole dataset
    (None), a cap that loads the whole dataset all the same (``Workload.whole_dataset``: at or above its training
    examples), so the same data is never a record of its own under another cell id."""
    if samples is not None and w.samples.get(size) is None and w.whole_dataset(samples):
        return None
    return unless_default(samples, w, "samples", size)


def seq_len_unless_default(seq_len: int | None, w, size: str) -> int | None:
    """``seq_len`` (an override of a step-timed model's sequence length), or None when it equals the model's own at
    ``size`` (``model.config(size)["seq_len"]``): the default cell, as ``unless_default`` does for epochs and steps."""
    config = getattr(getattr(w, "model", None), "config", None)
    own = config(size).get("seq_len") if seq_len is not None and config is not None else None
    return None if own == seq_len else seq_len


def _check_sync(sync: str, scenario: Scenario, suite: str) -> None:
    if not Cadence.accepts(sync):
        raise PlanError(f"--sync {sync!r} is not valid; expected {Cadence.SYNTAX}")
    _raise_if(scenario.sync_problem(sync, suite))


def sweep_cells(grid, stacks: Sequence[str], *, suite: str | None = None, size: str, device: str,
                batch_size: int | None = None, epochs: int | None = None, samples: int | None = None,
                timeout_s: float | None = None, telemetry_samples: bool = False, data: str = "auto",
                profile: bool = False) -> list[Cell]:
    """One cell per (stack, variant) of a ``bench.run.sweep.Grid``, baseline first within each stack.

    Raises:
        PlanError: an unknown stack, the grid's workload or task is unknown, it has no variant for any
            selected stack, or ``data`` is not one of ``DATA_CHOICES``.
    """
    for s in stacks:
        _check("stack", s, list(STACKS))
    if samples is not None and samples <= 0:
        raise PlanError(f"samples must be positive, got {samples}")
    _check("data source", data, DATA_CHOICES)
    _check("workload", grid.workload, list(WORKLOADS))
    if grid.task not in WORKLOADS[grid.workload].tasks:
        raise PlanError(f"workload {grid.workload!r} has no task {grid.task!r}")
    w = WORKLOADS[grid.workload]
    batch_size = scenario_of(w).batch_override(w, size, batch_size)
    cells = [
        Cell(stack=s, suite=suite or grid.name, workload=grid.workload, task=grid.task, size=size,
             device=device, variant=v.name, settings=v.settings, baseline=v.baseline, batch_size=batch_size,
             epochs=unless_default(epochs, w, "epochs", size), samples=samples_unless_default(samples, w, size),
             timeout_s=timeout_s or TIMEOUT_S[size],
             telemetry_samples=telemetry_samples,
             data=data, profile=profile)
        for s in stacks
        for v in grid.variants(s)
    ]
    if not cells:
        raise PlanError(f"grid {grid.source} has no variant for stacks {', '.join(stacks)}")
    return cells
