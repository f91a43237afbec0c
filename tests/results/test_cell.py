"""The cell as the worker's input file carries it: a pydantic model whose scenario inputs are typed and resolved."""

import json

import pytest
from pydantic import ValidationError

from bench.results.cell import Cell, EpochInputs, StepInputs

BASE = dict(stack="pytorch", suite="classic", workload="mnist_mlp", task="fit", size="smoke", device="cpu")


@pytest.mark.parametrize("inputs", [
    EpochInputs(batch_size=64, epochs=3, samples=100, data="synthetic", named=("batch_size", "data")),
    StepInputs(batch_size=2, steps=3, seq_len=16, named=("batch_size",)),
    None,
])
def test_the_worker_input_file_gives_back_the_same_cell_and_inputs_kind(inputs):
    c = Cell(**BASE, settings={"tf32": "off"}, inputs=inputs, repeat=2, schedule={"round": 2})
    back = Cell.from_dict(json.loads(json.dumps(c.to_dict())))
    assert back == c and type(back.inputs) is type(inputs) and back.run_id == c.run_id


def test_inputs_refuse_what_no_cell_could_run():
    with pytest.raises(ValidationError):
        EpochInputs(batch_size=0, epochs=1)
    with pytest.raises(ValidationError):
        StepInputs(batch_size=1, steps=1, epochs=3)  # an epochs input is not a step-timed cell's
    with pytest.raises(ValidationError):
        Cell(**BASE, batch_size=64)  # inputs live in the cell's inputs, nowhere else


def test_a_scenario_reads_its_own_kind_of_inputs_only():
    c = Cell(**BASE, inputs=EpochInputs(batch_size=8, epochs=1))
    assert c.inputs_as(EpochInputs).batch_size == 8
    with pytest.raises(TypeError, match="EpochInputs inputs, not StepInputs"):
        c.inputs_as(StepInputs)
    with pytest.raises(TypeError, match="NoneType"):
        Cell(**BASE).inputs_as(EpochInputs)


def test_the_id_names_the_inputs_set_off_their_default_in_field_order():
    named = EpochInputs(batch_size=32, epochs=3, samples=10, data="real", named=("data", "epochs", "batch_size"))
    assert Cell(**BASE, inputs=named).id.endswith("__default__batch_size=32+epochs=3+data=real")
    unnamed = Cell(**BASE, inputs=EpochInputs(batch_size=32, epochs=3))
    assert unnamed.id == "pytorch__classic__mnist_mlp__fit__smoke__default"  # values, but the defaults
    step = StepInputs(batch_size=4, steps=7, seq_len=128, named=("batch_size", "steps", "seq_len"))
    paper = dict(BASE, suite="paper", workload="bert")
    assert Cell(**paper, variant="bs4", inputs=step).id.endswith("__bs4__steps=7+seq_len=128")
    assert Cell(**paper, variant="bs4+sync-step", inputs=step).id.endswith("__batch_size=4+steps=7+seq_len=128")
