"""The sweep grid's models (bench.run.sweep): what a grid file may hold, and the variants it expands to."""

from __future__ import annotations

import pytest

from bench.run import sweep

_G = "name: g\nworkload: mnist_cnn_tuning\ntask: fit\n"


def test_values_keep_their_yaml_types_and_null_sections_are_empty():
    grid = sweep.parse(_G + "engines:\n  torch: {baseline: null, grid: [{num_workers: [6], preload: [true]}]}\n"
                       "  jax: {grid: null}\nstacks: null\n", "g.yaml")
    [torch_base, six] = grid.variants("pytorch")
    assert torch_base.baseline and torch_base.settings == {}
    assert six.settings == {"num_workers": 6, "preload": True} and not six.baseline
    assert type(six.settings["num_workers"]) is int and type(six.settings["preload"]) is bool
    assert [v.name for v in grid.variants("jax")] == ["default"]


def test_a_stack_block_replaces_its_engine_block_and_defaults_collapse():
    grid = sweep.parse(_G + "engines:\n  torch: {grid: [{compile: [default, none]}]}\n"
                       "stacks:\n  pytorch-cu12: {grid: [{num_workers: [0, 6]}]}\n", "g.yaml")
    assert [v.name for v in grid.variants("pytorch")] == ["default", "compile=default"]  # compile none: the default
    assert [v.name for v in grid.variants("pytorch-cu12")] == ["default", "num_workers=6"]  # 0: the default
    assert grid.variants("keras3-tf") == []


def test_a_value_valid_for_the_engine_but_not_the_stack_is_left_to_the_cell():
    """A combination a stack cannot run (jit_compile 'auto' on Keras 2) is an unsupported record, not a bad grid."""
    grid = sweep.parse(_G + "stacks: {keras2-tf: {baseline: {jit_compile: auto}}}", "g.yaml")
    assert grid.variants("keras2-tf")[0].settings == {"jit_compile": "auto"}


def test_errors_name_the_file_and_count_the_rest():
    with pytest.raises(sweep.GridError) as e:
        sweep.parse("workload: 1\ntask: 2\nengines: {}", "x/g.yaml")
    assert str(e.value) == "x/g.yaml: workload: Input should be a valid string (and 1 more)"


def test_a_knob_value_of_no_type_is_one_error_with_the_value_given():
    """pydantic tries each type a knob value may have and fails once per type: the author reads one error, with the
    value they wrote, not the type pydantic tried first (before: "preload[0].bool: Input should be a valid boolean
    (and 3 more)")."""
    with pytest.raises(sweep.GridError) as e:
        sweep.parse(_G + "engines:\n  torch: {grid: [{preload: [null], num_workers: [{a: 1}]}]}\n", "g.yaml")
    assert str(e.value) == ("g.yaml: engines.torch.grid[0].preload[0]: null is not a knob value (a string, a number "
                            "or true/false) (and 1 more)")


def test_the_default_grid_is_the_same_grid_as_a_model():
    """tuning.yaml's blocks are the engines' (no stack block) and every knob in it is one of its engine's."""
    grid = sweep.default_grid("tuning")
    assert (grid.name, grid.workload, grid.task) == ("tuning", "mnist_cnn_tuning", "fit")
    assert set(grid.blocks) == {"keras", "torch", "jax"}
    assert all(isinstance(b, sweep.EngineBlock) for b in grid.blocks.values())
