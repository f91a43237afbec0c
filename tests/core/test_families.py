"""The framework families are plug-ins declared in one registry, ``bench.core.families.FAMILIES``: every family has
what its line promises (settings, engines, adapter, free-running loop, the workload builder it trains), every list
keyed by family derives from the registry, and no other module spells a list of family names of its own."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core import knobs
from bench.core.families import FAMILIES, FRAMEWORKS, KINDS, Family, framework_family
from bench.core.settings import Settings
from bench.core.stacks import STACKS

ROOT = Path(__file__).resolve().parents[2]
#: The one module allowed to list the families (and the frameworks they drive).
REGISTRY = ROOT / "bench" / "core" / "families" / "__init__.py"
FRAMEWORK_MODULES = ("torch", "tensorflow", "jax", "keras", "tf_keras", "flax", "optax", "torchvision")


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_has_its_settings_engines_adapter_loop_and_builder(name):
    from bench.models import engines
    from bench.models.engines import frameworks
    from bench.models.workloads import Workload
    from bench.run.fidelity import hand_loop

    f = FAMILIES[name]
    assert f.name == name
    for kind in f.kinds:
        cls = f.settings(kind)
        assert cls is not None and issubclass(cls, Settings) and cls.engine == name, (name, kind)
        assert knobs.settings_class(name, kind) is cls
    assert f.kinds[0] == "epochs"  # every family trains the epoch suites
    epochs = importlib.import_module(f.module("epochs"))
    assert engines.epoch_engine(name) is epochs and callable(epochs.fit)
    if f.steps is not None:
        steps = importlib.import_module(f.module("steps"))
        assert engines.step_engine(name) is steps and callable(steps.run)
    else:  # no step engine without its settings, nor the other way round
        assert importlib.util.find_spec(f.module("steps")) is None
        with pytest.raises(ValueError, match="unknown engine"):
            engines.step_engine(name)
    adapter = importlib.import_module(f.module("adapter")).ADAPTER
    assert isinstance(adapter, frameworks.Framework) and adapter.module == f.framework
    assert frameworks.framework(f.framework) is adapter and framework_family(f.framework) is f
    loop = hand_loop(name)
    assert loop is not None and callable(loop.run)
    assert f.builder in {fd.name for fd in dataclasses.fields(Workload)}


def test_a_family_without_the_workloads_model_is_told_by_its_registry_line():
    from bench.models.engines import missing_model

    bare = type("W", (), {"name": "w", **{f.builder: None for f in FAMILIES.values()}})()
    for f in FAMILIES.values():
        assert missing_model(f.name, bare) == (f"w has no {f.model_label} definition (Workload.{f.builder}) yet: "
                                               f"the {f.name} engine cannot run it")
    assert missing_model("mxnet", bare) is None


def test_every_list_of_families_derives_from_the_registry():
    from bench.results import history
    from bench.run.selftest import run as selftest

    with_steps = [f.name for f in FAMILIES.values() if f.steps is not None]
    assert set(knobs.SETTINGS) == {(f.name, kind) for f in FAMILIES.values() for kind in f.kinds}
    assert knobs.EPOCH_ENGINES == tuple(FAMILIES) == tuple(knobs.KNOBS) == tuple(knobs.DEFAULTS)
    assert list(knobs.STEP_KNOBS) == with_steps
    assert set(KINDS) == {kind for f in FAMILIES.values() for kind in f.kinds}
    assert tuple(f.framework for f in FAMILIES.values()) == FRAMEWORKS and len(set(FRAMEWORKS)) == len(FAMILIES)
    assert history.FRAMEWORKS is FRAMEWORKS and sorted(selftest.BACKENDS) == sorted(FRAMEWORKS)
    # every stack names a family and a framework one of them drives; every family has a stack
    for s in STACKS.values():
        assert s.family in FAMILIES and s.backend in FRAMEWORKS, s.id
    assert {s.family for s in STACKS.values()} == set(FAMILIES)


def test_the_registry_and_the_knobs_import_only_the_standard_library_and_bench_core():
    """The host's bare python3 validates knobs: the registry must not reach into bench.run or a framework."""
    code = ("import sys, bench.core.knobs, bench.core.families; "
            "print([m for m in sys.modules if (m.startswith('bench.') and not m.startswith('bench.core')) "
            f"or m.split('.')[0] in {FRAMEWORK_MODULES + ('numpy',)!r}])")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


def test_a_family_package_imports_no_framework_until_a_cell_calls_it():
    modules = [f.module(part) for f in FAMILIES.values() for part in ("adapter", "fit", "steps", "handloop", "data")
               if importlib.util.find_spec(f.module(part)) is not None]
    code = (f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
            f"print([m for m in sys.modules if m.split('.')[0] in {FRAMEWORK_MODULES!r}])")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


# ---- no second list of families ---------------------------------------------------------------------------------

def _names() -> set[str]:
    """The names a list of families would spell: the families' and the frameworks they drive."""
    return set(FAMILIES) | set(FRAMEWORKS)


def _keys(node: ast.AST) -> list[ast.expr] | None:
    """The elements of a literal collection (a dict's keys), None for anything else."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return list(node.elts)
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if k is not None]
    return None


def _family_list(node: ast.AST, names: set[str]) -> bool:
    """Whether ``node`` is a literal list of families: a tuple, list, set or dict keys made only of family or
    framework names (two or more of them), or a dict keyed by tuples that lead with two or more of them."""
    elts = _keys(node)
    if not elts or len(elts) < 2:
        return False
    strings = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(strings) == len(elts) and set(strings) <= names and len(set(strings)) >= 2:
        return True
    if isinstance(node, ast.Dict):
        firsts = [k.elts[0].value for k in elts if isinstance(k, ast.Tuple) and k.elts
                  and isinstance(k.elts[0], ast.Constant) and k.elts[0].value in names]
        return len(set(firsts)) >= 2
    return False


def family_lists(source: str, names: set[str]) -> list[int]:
    """The lines of ``source`` that spell a list of families (``_family_list``) or declare a ``Family``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        declares = isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Family"
        if declares or _family_list(node, names):
            found.append(node.lineno)
    return found


def test_the_checker_finds_the_lists_the_registry_replaced():
    names = _names()
    for spelled in ('_MODULES = {"epochs": {"keras": "keras_engine", "torch": "torch_engine", "jax": "jax_engine"}}',
                    'BUILDERS = {"keras": "build_keras", "torch": "build_torch"}',
                    'SETTINGS = {("keras", "epochs"): A, ("torch", "epochs"): B}',
                    'BACKENDS = ("torch", "jax", "tensorflow")',
                    'if engine in {"keras", "jax"}: pass',
                    'FAMILY = Family("mxnet", "bench.models.engines.mxnet", "mxnet", "build_mxnet", "mxnet", S)'):
        assert family_lists(spelled, names), spelled
    for fine in ('imports = ("keras", "jax", "keras_hub", "keras_cv")',  # a stack's import check: packages
                 'framework = {"jax": "Flax NNX"}.get(engine, engine)',  # one name is no list
                 'if backend == "torch": pass'):
        assert not family_lists(fine, names), fine


def test_no_module_but_the_registry_spells_a_list_of_families():
    """Another tuple or dict of family (or framework) names would be a second registry, which a new family would
    have to find and extend: every such list derives from ``bench.core.families.FAMILIES`` instead."""
    names = _names()
    found = {}
    for path in sorted((ROOT / "bench").rglob("*.py")):
        if path == REGISTRY:
            continue
        lines = family_lists(path.read_text(encoding="utf-8"), names)
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert not found, f"lists of families outside {REGISTRY.relative_to(ROOT)}: {found}"
    assert family_lists(REGISTRY.read_text(encoding="utf-8"), names)  # the registry itself is seen


def test_a_new_family_is_one_registry_line(monkeypatch):
    """The run-time lookups read the registry when called: a family's line is all they need (its engines, its
    adapter; the knobs' lists are derived from the same lines when ``bench.core.knobs`` is imported)."""
    from bench.models import engines

    extra = Family("extra", "bench.models.engines.torch", "extra-framework", "build_torch", "extra",
                   FAMILIES["torch"].epochs)
    monkeypatch.setitem(FAMILIES, "extra", extra)
    assert framework_family("extra-framework") is extra
    assert engines.epoch_engine("extra") is importlib.import_module("bench.models.engines.torch.epochs")
    with pytest.raises(ValueError, match="unknown engine 'extra' or kind 'steps'"):
        engines.step_engine("extra")
