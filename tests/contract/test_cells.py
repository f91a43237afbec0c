"""Every cell the registries declare, family x workload x task at smoke size (rows from ``bench.core.families``,
``bench.core.stacks``, ``bench.models.workloads``): the plan has it on every stack of the family, its smoke size is
declared, and it either has an engine and a model to run or is recorded unsupported with the registry's reason.

These checks import no framework: running every cell of the grid at smoke size would add minutes to CI, so the
cells that train are the few chosen in tests/run/test_integration.py (and the paper suite's smoke cells in
tests/models/workloads/test_paper.py), and each family's model of each workload is built and run forward once in
tests/contract/test_parity.py."""

import importlib.util

import pytest

from bench.core import knobs
from bench.core.families import FAMILIES
from bench.core.stacks import STACKS
from bench.models.engines import missing_model
from bench.models.workloads import SUITES, get_workload
from bench.run.plan import expand
from bench.run.scenarios import scenario_of
from tests.contract.grid import cell_rows


def family_stacks(family: str) -> list[str]:
    """The stacks a family trains (``Stack.family``)."""
    return [s.id for s in STACKS.values() if s.family == family]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_trains_a_stack(family):
    assert family_stacks(family)


@pytest.mark.parametrize("family, name, task", cell_rows())
def test_every_cell_is_planned_at_smoke_size_and_runs_or_says_why_not(family, name, task):
    w = get_workload(name)
    assert name in SUITES[w.suite]
    kind = scenario_of(w).name
    if kind == "epochs":
        assert w.epochs["smoke"] >= 1 and (w.samples["smoke"] or 0) // w.batch_for("smoke") >= 2
    else:
        assert w.steps["smoke"] >= 1 and task in {t for t, _ in w.cells}
    stacks = family_stacks(family)
    cells = expand(stacks, w.suite, "smoke", "cpu", [name], [task])
    assert {c.stack for c in cells} == set(stacks)
    assert {(c.workload, c.task, c.size) for c in cells} == {(name, task, "smoke")}
    f = FAMILIES[family]
    if kind not in f.kinds:  # e.g. jax has no step engine: its paper cells are recorded unsupported, with why
        assert all("no step-timed engine" in (knobs.check(STACKS[s], {}, kind) or "") for s in stacks)
        return
    assert importlib.util.find_spec(f.module(kind)) is not None
    if kind == "epochs":
        reason = missing_model(family, w)
        assert (getattr(w, f.builder) is None) == (reason is not None), reason
