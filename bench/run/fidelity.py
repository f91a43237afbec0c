"""Fidelity of the harness: its ms/step under each timing cadence against a free-running loop.

The free-running ("hand") run (each family's ``handloop`` module: ``bench.models.engines.HandLoop``) trains the same
model on the same data with no hooks at all: one epoch to compile, then a device barrier and a clock read around the
remaining epochs as one block (PyTorch: the bare loop, no loss read-back; Keras: ``fit`` calls with no callbacks, a
call of 1 epoch and one of ``epochs`` after the compiling one: their difference is ``epochs - 1`` steady epochs, without
the cost each call pays before its first step to build its input pipeline, which the harness's epoch
edges do not count either; ``handloop_fit_call_overhead_s`` records that cost). The
harness runs as cells run it (``bench.models.engines``, GPU telemetry sampler included) once per cadence
(``bench.instruments.timing.Cadence``: ``step``, ``every:N``, ``epoch``). Order: hand, each cadence, each cadence
again in reverse, hand (an ABBA design: a drift inside the process, like the few percent seen on
keras3-torch when the hand loop always ran first, results/fidelity/README.md, falls equally on both
sides of every comparison).

Per cadence: ``ms_per_step`` (steady epochs 2..N, mean of its two runs) and ``ratio`` = that over the
hand runs' mean ms/step; ``overhead_pct`` = 100 * (ratio - 1). A CPU cannot tell the cadences apart
where step cost dominates; the GPU run, with sub-millisecond steps, is the one that shows what a
per-step barrier costs.

Targets: |ratio - 1| <= 2 %, overhead <= 1 % on a GPU, where step cost dominates.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from typing import Any, cast

from bench.core.families import FAMILIES
from bench.core.families.keras import KerasEpochSettings
from bench.core.knobs import settings_class
from bench.core.stacks import Stack, get_stack
from bench.instruments.telemetry import sampler
from bench.instruments.timing import Cadence
from bench.models.engines import HandLoop, epoch_engine, frameworks
from bench.models.workloads import Workload
from bench.results.cell import Cell, EpochInputs
from bench.run.cellenv import cell_env
from bench.run.scenarios.epochs import EPOCHS, fit_workload

#: The free-running loops' math mode: the harness cell's default (each framework's shipped TF32 mode), so the
#: two sides of the comparison differ only in how they are timed.
TF32_AS_HARNESS = KerasEpochSettings.tf32


def hand_loop(engine: str) -> HandLoop | None:
    """The free-running loop of a family (the ``handloop`` module of its package), None where it has none."""
    family = FAMILIES.get(engine)
    if family is None:
        return None
    name = family.module("handloop")
    try:
        return cast(HandLoop, importlib.import_module(name))
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        return None


CADENCES = ("step", "every:8", "epoch")


def checked_request(stack_id: str, workload: str, epochs: int, cadences: tuple[str, ...]) -> tuple[Stack, Workload]:
    """The stack and the epoch-timed workload ``measure`` is asked to time.

    Raises:
        KeyError: unknown stack or workload. ValueError: fewer than 2 epochs, an invalid cadence, or a step-timed
            workload.
    """
    if epochs < 2:
        raise ValueError("fidelity needs at least 2 epochs (the first one compiles)")
    for c in cadences:
        Cadence.parse(c)
    return get_stack(stack_id), fit_workload(workload)


def harness_settings(settings_cls: Any, cadence: str) -> Any:
    """The harness side's settings for ``cadence``: a default cell's, less what the free-running loop does not do,
    so that the two sides differ only in how they are timed: ``augment=False`` (the loop trains on the stored
    images) and, on Keras, ``progress=none`` (the loop's ``fit`` has no callbacks and ``verbose=0``; the classic
    workloads' default, the 2017 notebooks' batch-end callback, reads the logs every step, a method choice whose
    cost ``results/method-cpu-callback`` measures apart, not a cost of the timing cadence)."""
    chosen: dict[str, Any] = {"sync": cadence, "augment": False}
    if "progress" in {f.name for f in dataclasses.fields(settings_cls)}:
        chosen["progress"] = "none"
    return settings_cls.from_dict(chosen)


def become_cell_process(stack: Stack, device: str) -> None:
    """Give this process the environment a default cell of ``stack`` on ``device`` gets (``cell_env``), before any
    framework is imported: what ``cell_env`` leaves out (a TF32 override a cell must not inherit) is removed."""
    env = cell_env(stack, device)
    for removed in set(os.environ) - set(env):
        del os.environ[removed]
    os.environ.update(env)
    if stack.backend != "tensorflow":
        frameworks.hide_gpus_from_tensorflow()


def steady_ms(metrics: dict[str, Any], steady_steps: int) -> float:
    """A harness run's ms/step over the ``steady_steps`` steps after its first epoch, from its ``metrics``
    (``Metrics`` as JSON: ``epoch_s``, s)."""
    return 1000.0 * sum(metrics["epoch_s"][1:]) / steady_steps


def cadence_summary(metrics: list[dict[str, Any]], steady_steps: int, hand_ms: float) -> dict[str, Any]:
    """One cadence's entry of ``measure``'s ``cadences`` from its runs' ``metrics`` (``Metrics`` as JSON):
    ms/step over the ``steady_steps`` steps after the first epoch, each run's and their mean, the epochs, barriers
    and clock reads per run, and the mean's ratio to the hand loop's ``hand_ms`` (ms/step)."""
    each = [steady_ms(m, steady_steps) for m in metrics]
    mean = sum(each) / len(each)
    return {"ms_per_step": mean, "runs_ms": each, "epoch_s": [m["epoch_s"] for m in metrics],
            "barriers": [m["barriers"] for m in metrics], "clock_reads": [m["clock_reads"] for m in metrics],
            "ratio": mean / hand_ms, "overhead_pct": 100.0 * (mean / hand_ms - 1.0)}


def harness_cell(stack_id: str, w: Workload, size: str, device: str, epochs: int) -> tuple[Cell, int]:
    """The fit cell the harness runs for ``measure`` (``epochs`` epochs, the workload's batch at ``size``, resolved as
    the plan resolves a cell's inputs: ``Scenario.inputs``) and its batch size."""
    cell = Cell(stack=stack_id, suite=w.suite, workload=w.name, task="fit", size=size, device=device,
                inputs=EPOCHS.inputs(w, "fit", size, {"epochs": epochs}))
    return cell, cell.inputs_as(EpochInputs).batch_size


def measure(stack_id: str, workload: str, device: str, size: str, epochs: int = 4,
            cadences: tuple[str, ...] = CADENCES, done: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run hand, each cadence, each cadence in reverse, hand on ``workload``; returns ms/step and ratios. ``done``
    gets each run as it ends, ``{"run": name, "ms_per_step": steady ms/step}``: what a measurement cut short by a
    signal keeps (``bench.run.session.fidelity``).

    Returns:
        ``order`` (the runs as they ran), ``handloop_ms_per_step`` (steady epochs, mean of the two hand
        runs, ms), ``handloop_runs_ms`` (each), ``handloop_fit_call_overhead_s`` (Keras: each hand run's
        cost of one ``fit`` call before its first step, s; None for PyTorch), ``cadences``: per cadence
        ``ms_per_step`` (mean of its two runs), ``runs_ms`` (each), ``epoch_s`` (each run's epochs, s),
        ``barriers`` and ``clock_reads`` (per run), ``ratio`` (over the hand runs) and ``overhead_pct``
        (100 * (ratio - 1)).

    Raises:
        KeyError: unknown stack or workload. ValueError: fewer than 2 epochs or an invalid cadence.
        bench.models.engines.NoisyMeasurement: a Keras free-running run measured no time for its steady epochs.
    """
    stack, w = checked_request(stack_id, workload, epochs, cadences)
    become_cell_process(stack, device)
    ds = w.load_data(size, data="fallback")  # times the harness: synthetic data of the real shapes will do
    cell, batch = harness_cell(stack_id, w, size, device, epochs)
    steps = -(-ds.n_train // batch)
    hand = hand_loop(stack.family)
    if hand is None:
        raise ValueError(f"fidelity has no free-running loop for the {stack.family!r} engine ({stack_id})")
    order = ["hand", *cadences, *reversed(cadences), "hand"]
    hand_ms, overhead_s = list[float](), list[float]()  # each hand run's steady ms/step, its fit call's cost (s)
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in cadences}
    done = [] if done is None else done
    for name in order:
        if name == "hand":
            h = hand.run(stack=stack, workload=w, ds=ds, device=device, epochs=epochs, batch=batch,
                         tf32=TF32_AS_HARNESS)
            hand_ms.append(1000.0 * h["steady_s"] / ((epochs - 1) * steps))
            overhead_s += [h["fit_call_overhead_s"]] if "fit_call_overhead_s" in h else []
            done.append({"run": name, "ms_per_step": hand_ms[-1]})
            continue
        tel = sampler.for_device(device)  # the harness as cells run it, sampler included
        out = epoch_engine(stack.family).fit(stack, w, ds, cell, harness_settings(settings_class(stack.family), name),
                                             telemetry=tel)
        runs[name].append(out.metrics.model_dump(exclude_unset=True))
        done.append({"run": name, "ms_per_step": steady_ms(runs[name][-1], (epochs - 1) * steps)})
    hand_mean = sum(hand_ms) / len(hand_ms)
    per_cadence = {c: cadence_summary(ms, (epochs - 1) * steps, hand_mean) for c, ms in runs.items()}
    return {"stack": stack_id, "workload": workload, "device": device, "size": size, "epochs": epochs,
            "steps_per_epoch": steps, "batch_size": batch, "order": order, "handloop_ms_per_step": hand_mean,
            "handloop_runs_ms": hand_ms, "handloop_fit_call_overhead_s": overhead_s or None,
            "cadences": per_cadence, "data_source": ds.source}
