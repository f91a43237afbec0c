"""Cells as the plan makes them, built one at a time: the scenario's inputs resolved (``Scenario.inputs``)."""

from typing import Any

from bench.models.workloads import WORKLOADS
from bench.results.cell import Cell, EpochInputs
from bench.run.scenarios import INPUT_NAMES, scenario_of


def make_cell(**kw: Any) -> Cell:
    """A ``Cell`` of ``kw``'s fields, its inputs resolved by its workload's scenario from the keywords named in
    ``INPUT_NAMES`` (``batch_size``, ``epochs``, ``samples``, ``data``, ``steps``, ``seq_len``; the rest the
    workload's own at ``kw["size"]``), as ``bench.run.plan`` resolves them."""
    w = WORKLOADS[kw["workload"]]
    given = {k: kw.pop(k) for k in INPUT_NAMES if k in kw}
    return Cell(**kw, inputs=scenario_of(w).inputs(w, kw["task"], kw["size"], given))


def engine_cell(stack: str, w: Any, epochs: int, batch_size: int, device: str = "cpu") -> Cell:
    """A smoke-size fit cell of workload ``w`` on ``stack`` as an epoch engine takes it: ``epochs`` epochs of
    ``batch_size`` examples on ``device`` (``EpochInputs`` given as they are: a test picks its own)."""
    return Cell(stack=stack, suite=w.suite, workload=w.name, task="fit", size="smoke", device=device,
                inputs=EpochInputs(batch_size=batch_size, epochs=epochs))
