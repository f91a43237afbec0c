"""A run's inputs: typed per scenario, resolved once by the plan into the cell, which the engine takes whole."""

import pytest

from bench.core.request import Request
from bench.models.engines import Unsupported
from bench.models.workloads import SUITES, WORKLOADS
from bench.results.cell import EpochInputs, StepInputs
from bench.run import plan, session
from bench.run.scenarios import INPUT_NAMES, SCENARIOS, scenario_of


@pytest.mark.parametrize("size", ["smoke", "full"])
@pytest.mark.parametrize("suite", ["classic", "paper"])
def test_a_default_cell_holds_the_workloads_own_inputs_at_its_size(suite, size):
    for cell in plan.expand(["pytorch"], suite, size, "cpu"):
        w = WORKLOADS[cell.workload]
        own = scenario_of(w).defaults(w, cell.task, size)
        inputs = cell.inputs
        assert inputs is not None
        if isinstance(inputs, EpochInputs):
            assert (inputs.batch_size, inputs.epochs, inputs.samples, inputs.data, inputs.named) == (
                own["batch_size"], own["epochs"], own["samples"], "auto", ())
        else:  # a step-timed cell's variant names its batch: one of the task's published ones (capped at smoke)
            assert isinstance(inputs, StepInputs) and inputs.named == ("batch_size",)
            assert (inputs.steps, inputs.seq_len) == (own["steps"], own["seq_len"])
            assert cell.variant == f"bs{inputs.batch_size}"


def test_every_scenario_input_is_a_run_option_that_reaches_the_plan():
    names = {f.name for f in Request.options("run")}
    assert set(INPUT_NAMES) <= names
    assert {s.name: s.input_names() for s in SCENARIOS} == {
        "epochs": ("batch_size", "epochs", "samples", "data"), "steps": ("batch_size", "steps", "seq_len")}
    given = session.cell_inputs(Request(batch_size=64, epochs=3, samples=100, data="synthetic"))
    [cell] = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"], **given)
    assert cell.inputs == EpochInputs(batch_size=64, epochs=3, samples=100, data="synthetic",
                                      named=("batch_size", "epochs", "samples", "data"))
    with pytest.raises(plan.PlanError, match="unknown input 'batch'"):
        plan.expand(["pytorch"], "classic", "smoke", "cpu", batch=64)


@pytest.mark.parametrize("suite, engine", [("classic", "epoch_engine"), ("paper", "step_engine")])
def test_the_engine_takes_the_cell_the_plan_made_whole(suite, engine, monkeypatch):
    """The worker and the scenario hand the planned cell to the engine as it is: its batch size is the plan's, not
    one the worker or the scenario resolved again, and the record's batch size is the cell's."""
    from bench.run import worker
    from bench.run.scenarios import epochs, steps

    seen = []

    class Engine:
        def fit(self, stack, w, ds, cell, settings, telemetry=None):
            seen.append(cell)
            raise Unsupported("seen")

        def run(self, stack, w, cell, cfg, settings, telemetry=None):
            return self.fit(stack, w, cfg, cell, settings, telemetry)

    monkeypatch.setattr(epochs if engine == "epoch_engine" else steps, engine, lambda family: Engine())
    given = {"data": "synthetic"} if suite == "classic" else {}  # a fit cell's data: synthetic, no download
    cell = plan.expand(["pytorch"], suite, "smoke", "cpu", [SUITES[suite][0]], batch_size=3, **given)[0]
    rec = worker.run_cell(cell)
    assert rec["status"] == "unsupported" and rec["reason"] == "seen"
    assert seen == [cell] and rec["batch_size"] == cell.inputs.batch_size == 3
