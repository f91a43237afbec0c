"""Scenarios are plug-ins (``bench.run.scenarios``): every workload belongs to exactly one, each suite's cells expand
through its scenario, and no module outside the scenarios asks which kind of workload it holds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench.models.workloads import SUITES, WORKLOADS, Workload
from bench.run import plan
from bench.run.scenarios import SCENARIOS, Scenario, scenario_of, suite_scenario
from bench.run.scenarios.epochs import EPOCHS
from bench.run.scenarios.steps import STEPS

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS_DIR = ROOT / "bench" / "run" / "scenarios"
#: The classes that tell the kinds of workload apart; only a scenario may test for one.
KINDS = {"Workload", "StepWorkload"}
#: The flag that asked which kind a cell is, before the scenarios owned the difference.
FLAG = "step_timed"


def _names(node: ast.AST) -> set[str]:
    """The class names an ``isinstance`` second argument spells: ``X``, ``mod.X`` or a tuple of them."""
    if isinstance(node, ast.Tuple):
        return {n for e in node.elts for n in _names(e)}
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return set()


def kind_questions(source: str) -> list[int]:
    """The lines of ``source`` that test a workload's kind (``isinstance(_, Workload / StepWorkload)``) or spell
    the ``step_timed`` flag (a name, argument, keyword or attribute)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2
                and _names(node.args[1]) & KINDS):
            lines.append(node.lineno)
        spelled = (getattr(node, "id", None) if isinstance(node, ast.Name) else getattr(node, "arg", None)
                   if isinstance(node, (ast.arg, ast.keyword)) else getattr(node, "attr", None)
                   if isinstance(node, ast.Attribute) else None)
        if spelled == FLAG:
            lines.append(node.lineno)
    return sorted(lines)


def test_the_checker_finds_the_questions_the_scenarios_replaced():
    assert kind_questions("if isinstance(w, StepWorkload):\n    pass\n") == [1]
    assert kind_questions("ok = isinstance(w, (int, workloads.Workload))\n") == [1]
    assert kind_questions("def check(stack, settings, step_timed=False):\n    return step_timed\n") == [1, 2]
    assert kind_questions("check(stack, {}, step_timed=True)\n") == [1]
    assert kind_questions("isinstance(w, Scenario)\nw: StepWorkload = x\n") == []


def test_no_module_outside_the_scenarios_asks_which_kind_of_workload_it_holds():
    found = [f"{path.relative_to(ROOT)}:{line}" for path in sorted((ROOT / "bench").rglob("*.py"))
             if SCENARIOS_DIR not in path.parents for line in kind_questions(path.read_text())]
    assert not found, f"ask bench.run.scenarios.scenario_of(w) instead: {found}"


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_workload_belongs_to_exactly_one_scenario(name):
    w = WORKLOADS[name]
    owners = [s for s in SCENARIOS if s.owns(w)]
    assert owners == [scenario_of(w)]
    assert scenario_of(w) is (EPOCHS if isinstance(w, Workload) else STEPS)


def test_the_registry_holds_one_instance_per_scenario_kind():
    assert [s.name for s in SCENARIOS] == ["epochs", "steps"]
    assert all(isinstance(s, Scenario) for s in SCENARIOS)
    with pytest.raises(ValueError, match="0 scenarios"):
        scenario_of(object())


@pytest.mark.parametrize("suite", list(SUITES))
def test_each_suites_cells_expand_through_its_scenario(suite):
    scenario = suite_scenario(suite)
    assert {scenario_of(WORKLOADS[n]) for n in SUITES[suite]} == {scenario}
    cells = plan.expand(["pytorch"], suite, "smoke", "cpu")
    assert cells and {scenario_of(WORKLOADS[c.workload]) for c in cells} == {scenario}
    if suite not in plan.sweep.DEFAULT_GRIDS:  # a grid expands its own variants
        want = [(i, v) for n in SUITES[suite] for t in WORKLOADS[n].tasks
                for i, v in scenario.cells(WORKLOADS[n], t, "smoke", {}, "default")]
        assert [(c.inputs, c.variant) for c in cells] == want


def test_each_scenario_rejects_the_overrides_only_the_other_reads():
    assert EPOCHS.override_problem("classic", {"epochs": 3}) is None
    assert "applies to the paper suite" in EPOCHS.override_problem("classic", {"steps": 3})
    assert "applies to the epoch suites (classic, tuning)" in STEPS.override_problem("paper", {"epochs": 3})
    assert STEPS.override_problem("paper", {"steps": 3, "seq_len": 64}) is None
    assert STEPS.sync_problem("epoch", "paper") and STEPS.sync_problem("step", "paper") is None
    assert EPOCHS.sync_problem("every:4", "classic") is None
    assert STEPS.data_problem("real", "paper") and EPOCHS.data_problem("real", "classic") is None


def test_a_scenarios_suites_are_named_from_the_registry(monkeypatch):
    """Help texts and errors name a scenario's suites as the workload registry groups them (``Scenario.suites_text``):
    one suite by its name, several as the epoch suites with theirs; a suite added to the registry is named too."""
    assert EPOCHS.suites() == ("classic", "tuning") and STEPS.suites() == ("paper",)
    assert (EPOCHS.suites_text, STEPS.suites_text) == ("the epoch suites (classic, tuning)", "the paper suite")
    monkeypatch.setitem(SUITES, "extra", ["mnist_mlp"])
    assert EPOCHS.suites_text == "the epoch suites (classic, tuning, extra)"
    assert STEPS.data_problem("real", "paper").endswith("--data applies to the epoch suites (classic, tuning, extra)")
